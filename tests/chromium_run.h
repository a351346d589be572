// An HTML report rendered by headless Chromium (Debian's chromium, installed by scripts/setup.sh), for the
// tests of the commands that write one (compare --html, schedule --html): the DOM Chromium built and a
// screenshot's pixels decoded by Pillow (python3-pil). Needs cli_run.h and python_run.h.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "cli_run.h"
#include "python_run.h"

namespace dnncast::chromium_test {

inline bool have_chromium() { return std::system("command -v chromium >/dev/null 2>&1") == 0; }

struct Rendered {
  bool ok = false;                                         // both Chromium runs and the decoding succeeded
  std::string dom;                                         // the page as Chromium's --dump-dom prints it
  long width = 0, height = 0, colours = 0, not_white = 0;  // the screenshot: size, distinct colours, pixels not white
};

// Renders file `html` in `dir` (Chromium's profile and the screenshot go there) at width x height.
inline Rendered render(const std::string& html, const std::string& dir, int width, int height) {
  Rendered rendered;
  const std::string chromium = "timeout 60 chromium --headless --no-sandbox --disable-gpu --user-data-dir=" +
                               cli_test::shell_quoted(dir + "/profile") + " ";
  const std::string page = cli_test::shell_quoted("file://" + html), png = dir + "/screenshot.png";
  if (std::system((chromium + "--dump-dom " + page + " >" + cli_test::shell_quoted(dir + "/dom.html") + " 2>/dev/null")
                      .c_str()) != 0)
    return rendered;
  rendered.dom = cli_test::read_text(dir + "/dom.html");
  if (std::system((chromium + "--screenshot=" + cli_test::shell_quoted(png) + " --window-size=" +
                   std::to_string(width) + "," + std::to_string(height) + " " + page + " >/dev/null 2>&1")
                      .c_str()) != 0)
    return rendered;
  const std::string out = python_test::run_python(
      "from PIL import Image\n"
      "image = Image.open('" +
      png +
      "').convert('RGB')\n"
      "pixels = list(image.getdata())\n"
      "print(image.size[0], image.size[1], len(set(pixels)), sum(1 for p in pixels if p != (255, 255, 255)))\n");
  EXPECT_EQ(out.rfind("FAILED", 0), std::string::npos) << out;
  std::istringstream numbers(out);
  rendered.ok =
      static_cast<bool>(numbers >> rendered.width >> rendered.height >> rendered.colours >> rendered.not_white);
  return rendered;
}

}  // namespace dnncast::chromium_test

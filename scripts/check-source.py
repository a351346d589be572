#!/usr/bin/python3
"""Checks the shape of src/ (issue 33; run by tests/docs/docs_test.cpp as part of `make test`).

    scripts/check-source.py [--root DIR]

The layering is written once, in src/CMakeLists.txt: each `dnncast_module(NAME DEPS ...)` is a folder of src/
and the modules it may use. This script fails (one line per problem, exit 1) when
  - a module depends on one defined after it (the order of src/CMakeLists.txt is the data flow);
  - a file of src/MODULE, or python/_dnncast.cpp (the forecast library's), includes a header of a module
    that its target does not reach through DEPS;
  - the forecast library (target dnncast_forecast_library) reaches libtorch, SQLite, or a module that does;
  - two files of src/ share a name; a src/cli/cmd_*.cpp is over 150 lines; a function of src/ is over 150
    lines (from its signature to the closing brace at the start of a line);
  - a file of src/MODULE opens a namespace other than its module's: `dnncast::MODULE` (or one nested in it),
    or `dnncast` itself for core/ and graph/, the vocabulary every room uses (errors, the training setup, the
    IR); a block that only forward-declares another module's types is allowed;
  - a comment of src/ names a path that does not exist: a module's file (`forecast/forecast.h`, `src/...`,
    with or without its extension), or a file of the checkout (docs/, scripts/, data/, tests/, bench/, fuzz/,
    python/), or DESIGN.md or STYLE.md, which are not in the checkout.
Exit 2 on bad usage.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_CMD_LINES = 150
MAX_FUNCTION_LINES = 150
# Libraries that must stay out of the forecast library, as they appear among DEPS.
HEAVY = {"SQLite::SQLite3": "SQLite", "${TORCH_LIBRARIES}": "libtorch", "${DNNCAST_PROFILE_LIB}": "libtorch"}


def cmake_calls(text, function):
    """The argument lists of every call of `function` in a CMake text, comments removed, as word lists."""
    text = re.sub(r"#[^\n]*", "", text)
    calls = []
    for match in re.finditer(r"\b" + re.escape(function) + r"\s*\(", text):
        depth, at = 1, match.end()
        while depth and at < len(text):
            depth += {"(": 1, ")": -1}.get(text[at], 0)
            at += 1
        calls.append(text[match.end():at - 1].split())
    return calls


def read_modules(root):
    """[(module, direct deps)] in the order of src/CMakeLists.txt, and the forecast library's members."""
    text = open(os.path.join(root, "src", "CMakeLists.txt")).read()
    modules = []
    for words in cmake_calls(text, "dnncast_module"):
        name, deps = words[0], []
        if "DEPS" in words:
            deps = words[words.index("DEPS") + 1:]
        modules.append((name, deps))
    links = {}
    for words in cmake_calls(text, "target_link_libraries"):
        links.setdefault(words[0], []).extend(w for w in words[1:] if w not in ("PUBLIC", "PRIVATE", "INTERFACE"))
    library = links.get("dnncast_forecast_library", [])
    for name, deps in modules:
        deps.extend(links.get("dnncast_" + name, []))
        if "${DNNCAST_PROFILE_LIB}" in deps:  # libtorch's module where the build has it
            deps.append("dnncast::profile")
    return modules, library


def closure(start, direct):
    seen, todo = set(), list(start)
    while todo:
        dep = todo.pop()
        if dep in seen:
            continue
        seen.add(dep)
        if dep.startswith("dnncast::"):
            todo.extend(direct.get(dep[len("dnncast::"):], []))
    return seen


def included_modules(path, module_names):
    found = []
    for number, line in enumerate(open(path, errors="replace"), 1):
        match = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
        if match and match.group(1) in module_names:
            found.append((number, match.group(1)))
    return found


def function_lengths(path):
    """(line, length, signature) of each function defined at the start of a line."""
    lines = open(path, errors="replace").read().split("\n")
    out = []
    start = None
    for index, line in enumerate(lines):
        if start is None:
            if line.endswith("{") and line[:1] not in ("", " ", "#", "/", "}") and "(" in "".join(lines[max(0, index - 3):index + 1]):
                if re.match(r"(namespace|struct|class|enum|extern|union)\b", line) or re.search(r"=\s*\{$", line):
                    continue
                start = index
        elif line == "}" or line.startswith("};"):
            # The signature may start a few lines up (parameters on their own lines).
            first = start
            while first > 0 and lines[first - 1][:1] not in ("", " ", "#", "/", "}") and not lines[first - 1].endswith(";"):
                first -= 1
            out.append((first + 1, index - first + 1, lines[first].strip()[:60]))
            start = None
    return out


# core/ and graph/ are the words every module speaks (InputError, TrainingSetup, Graph, Node): they stay in
# `dnncast` itself rather than making every other room write core::InputError and graph::Graph.
ROOT_NAMESPACE_MODULES = ("core", "graph")
NAMESPACE_OPEN = re.compile(r"^namespace\s+([A-Za-z_][\w:]*)\s*\{(.*)$")


def namespace_problems(relative, module, lines):
    """Top-level `namespace X {` blocks of a file of src/MODULE whose X is not the module's namespace."""
    own = "dnncast" if module in ROOT_NAMESPACE_MODULES else "dnncast::" + module
    problems = []
    depth = 0  # namespaces open at this line (closed by clang-format's `}  // namespace ...` lines)
    for index, line in enumerate(lines):
        if re.match(r"^}\s*//\s*namespace\b", line):
            depth = max(0, depth - 1)
            continue
        if re.match(r"^namespace\s*\{", line):
            depth += 1
            continue
        match = NAMESPACE_OPEN.match(line)
        if not match:
            continue
        depth += 1
        if depth > 1:
            continue  # nested in the module's own
        name = match.group(1)
        if name == own or name.startswith(own + "::"):
            continue
        # A block of forward declarations only (`namespace dnncast::learn { class Learner; }`) names another
        # module's type without opening a room in it.
        body = [match.group(2)]
        for follow in lines[index + 1:]:
            if follow.startswith("}"):
                break
            body.append(follow)
        declarations = [b.strip() for b in body if b.strip() and not b.strip().startswith("//")]
        if all(re.match(r"(class|struct|enum class|enum)\s+\w+(\s*:\s*\w+)?;$", d) for d in declarations):
            continue
        problems.append(f"{relative}:{index + 1}: namespace {name} in src/{module}/ (its namespace is {own})")
    return problems


PATH_IN_COMMENT = re.compile(r"(?<![\w./~-])((?:src/)?[a-z_]+/[A-Za-z0-9_./-]*[A-Za-z0-9_])")
# A path after one of these names on its line is that project's, not ours ("oneDNN's src/cpu/...").
FOREIGN = re.compile(r"oneDNN|torchvision|PyTorch|pytorch|ATen|XGBoost|timm|transformers")
TOP_FOLDERS = ("docs", "scripts", "data", "tests", "bench", "fuzz", "python")


def comment_text(line):
    at = line.find("//")
    if at < 0:
        return ""
    # Not inside a string literal: an even number of quotes before it.
    return line[at:] if line[:at].count('"') % 2 == 0 else ""


def path_exists(root, token, module_names):
    token = token.rstrip(".")
    if token.startswith("src/"):
        base = os.path.join(root, token)
    elif token.split("/")[0] in module_names:
        base = os.path.join(root, "src", token)
    elif token.split("/")[0] in TOP_FOLDERS:
        base = os.path.join(root, token)
    else:
        return True  # not a path of the checkout ("cpu/cuda", "fwd/bwd", ../shared/...)
    return any(os.path.exists(base + suffix) for suffix in ("", ".h", ".cpp", ".xz", ".md", ".py"))


def main(argv):
    root = ROOT
    if len(argv) == 3 and argv[1] == "--root":
        root = argv[2]
    elif len(argv) != 1:
        print(__doc__.strip().split("\n")[2].strip(), file=sys.stderr)
        return 2
    problems = []
    modules, library = read_modules(root)
    names = [name for name, _ in modules]
    direct = {name: deps for name, deps in modules}
    module_names = set(names) | {"cli"}
    for position, (name, deps) in enumerate(modules):
        for dep in deps:
            if dep.startswith("dnncast::"):
                target = dep[len("dnncast::"):]
                if target not in names:
                    problems.append(f"src/CMakeLists.txt: {name} depends on {target}, which is not a module")
                elif names.index(target) >= position:
                    problems.append(f"src/CMakeLists.txt: {name} depends on {target}, defined after it (the order is the layering)")
    for name, _ in modules:
        reach = {dep[len("dnncast::"):] for dep in closure(["dnncast::" + name], direct) if dep.startswith("dnncast::")}
        for path in sorted(glob.glob(os.path.join(root, "src", name, "*.[ch]*"))):
            for number, used in included_modules(path, module_names):
                if used not in reach:
                    problems.append(f"{os.path.relpath(path, root)}:{number}: includes {used}/, which module {name} "
                                    f"does not depend on (src/CMakeLists.txt)")
    library_reach = closure(library, direct)
    library_modules = {dep[len("dnncast::"):] for dep in library_reach if dep.startswith("dnncast::")}
    for dep in sorted(library_reach):
        if dep in HEAVY:
            problems.append(f"src/CMakeLists.txt: the forecast library reaches {HEAVY[dep]} ({dep})")
    for banned in ("profile", "store", "measure", "study", "calibrate"):
        if banned in library_modules:
            problems.append(f"src/CMakeLists.txt: the forecast library reaches module {banned}")
    python_module = os.path.join(root, "python", "_dnncast.cpp")
    if os.path.exists(python_module):
        for number, used in included_modules(python_module, module_names):
            if used not in library_modules:
                problems.append(f"python/_dnncast.cpp:{number}: includes {used}/, outside the forecast library")

    by_name = {}
    for path in sorted(glob.glob(os.path.join(root, "src", "**", "*"), recursive=True)):
        if not os.path.isfile(path):
            continue
        base = os.path.basename(path)
        if base in ("CMakeLists.txt", "README.md"):
            continue
        by_name.setdefault(base, []).append(os.path.relpath(path, root))
        if not path.endswith((".h", ".cpp")):
            continue
        relative = os.path.relpath(path, root)
        lines = open(path, errors="replace").read().split("\n")
        if re.match(r"cmd_.*\.cpp$", base) and len(lines) - 1 > MAX_CMD_LINES:
            problems.append(f"{relative}: {len(lines) - 1} lines (a command file holds at most {MAX_CMD_LINES})")
        module = relative.split(os.sep)[1]
        if module in module_names:
            problems.extend(namespace_problems(relative, module, lines))
        for line, length, signature in function_lengths(path):
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{relative}:{line}: function of {length} lines (at most {MAX_FUNCTION_LINES}): {signature}")
        for number, line in enumerate(lines, 1):
            comment = comment_text(line)
            if not comment:
                continue
            cited = re.search(r"(?<![\w/.])(DESIGN|STYLE)\.md", comment)
            if cited:
                problems.append(f"{relative}:{number}: names {cited.group(0)}, which is not in the checkout")
            for match in PATH_IN_COMMENT.finditer(comment):
                token = match.group(1)
                if re.search(r"[<>*{}]|[A-Z]{3,}", token) or FOREIGN.search(comment[:match.start()]):
                    continue
                if not path_exists(root, token, module_names):
                    problems.append(f"{relative}:{number}: names {token}, which does not exist")
    for base, paths in sorted(by_name.items()):
        if len(paths) > 1:
            problems.append(f"src/: {len(paths)} files named {base}: {', '.join(paths)}")
    for problem in problems:
        print(problem)
    files = sum(len(paths) for paths in by_name.values())
    print(f"{len(modules)} modules, {files} files of src/ checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

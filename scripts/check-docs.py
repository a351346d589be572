#!/usr/bin/python3
"""Checks that the docs name only things that exist (issue 16; run by tests/docs/docs_test.cpp).

    scripts/check-docs.py [--build BUILD] [FILE.md ...]      default: README.md docs/*.md

For every Markdown file:
  - each path under build/, scripts/, data/, tests/, docs/, src/ or bench/ (not part of a longer
    path such as ../shared/data/...) must exist in the checkout, or with .xz (the docs decompress
    with `xz -dk`), or with an extension (src/forecast/layer_model: its .h and .cpp), or be written by
    a command of the same file (after -o, --out, > or .backup);
    a path under build/ must exist in BUILD, be a file the Makefile writes there (`>$(BUILD)/NAME`:
    build/configure.log, which a folder configured by cmake itself lacks), or name a CMake target
    (`cmake --build BUILD --target help`) that this build does not make (benchmarks off); a target
    built elsewhere is a problem;
  - each `dnncast COMMAND [SUBCOMMAND] ... --option` in code (backticks or a fenced block) must name a
    command that `BUILD/dnncast COMMAND --help` accepts, a subcommand its help lists, and options
    that the help of the (sub)command lists.
Paths with a placeholder (<...>, *, {...}, CAPITALS) are not checked. One line per problem on stdout,
"file:line: ..."; exit 1 when there is any, 2 on bad usage.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH_RE = re.compile(r"(?<![\w./~-])((?:build|scripts|data|tests|docs|src|bench)/[A-Za-z0-9_./<>*{}+-]*[A-Za-z0-9_/*>}-])")
CREATED_RE = re.compile(r"(?:\s-o|--out|>|\.backup)\s+\"?((?:build|scripts|data|tests|docs|src|bench)/[A-Za-z0-9_./-]+)")
CODE_SPAN_RE = re.compile(r"``?([^`]+)``?")
# `dnncast CMD` where a command starts: at the start of the code, after a shell separator or `$ `, or as
# build/dnncast (also after `taskset -c N` or VAR=value); not "... newer than this dnncast understands".
COMMAND_RE = re.compile(r"(?:^\s*|[;&|(]\s*|\$\s+|build/)dnncast\s+([a-z][a-z-]*)(?=\s|$)((?:\s+[^\s|;&#`]+)*)")


def code_texts(text):
    """(line number, code) for every fenced block line (continuations joined) and inline code span."""
    out = []
    fenced = False
    pending, pending_line = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            if not pending:
                pending_line = number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            out.append((pending_line, pending + line))
            pending = ""
        else:
            for span in CODE_SPAN_RE.findall(line):
                out.append((number, span.replace("\\|", "|")))
    # Code spans broken across lines: join each paragraph and look again.
    for match in re.finditer(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
        if "\n" in match.group(1):
            out.append((text.count("\n", 0, match.start()) + 1, " ".join(match.group(1).split())))
    return out


def listed_subcommands(helptext):
    """The names under "Subcommands:" in a CLI11 help text (empty when it has none)."""
    names, inside = set(), False
    for line in helptext.splitlines():
        if line.strip() == "Subcommands:":
            inside = True
        elif inside and re.match(r"^  ([a-z][a-z-]*)\s", line):
            names.add(line.split()[0])
        elif inside and line.strip() and not line.startswith("  "):
            inside = False
    return names


class Cli:
    def __init__(self, binary):
        self.binary = binary
        self.helps = {}

    def help(self, words):
        key = tuple(words)
        if key not in self.helps:
            try:
                run = subprocess.run([self.binary, *words, "--help"], capture_output=True, text=True, timeout=60)
                self.helps[key] = run.stdout + run.stderr if run.returncode == 0 else None
            except OSError:
                self.helps[key] = None
        return self.helps[key]


def makefile_outputs():
    """Names of the files the Makefile writes into its build folder (`>$(BUILD)/configure.log`): a doc may
    name them as build/NAME whatever folder BUILD is and however it was configured."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as makefile:
        return set(re.findall(r">\s*\$\(BUILD\)/([A-Za-z0-9_.-]+)", makefile.read()))


def build_targets(build):
    try:
        run = subprocess.run(["cmake", "--build", build, "--target", "help"], capture_output=True, text=True,
                             timeout=120)
    except OSError:
        return set()
    targets = set()
    for line in run.stdout.splitlines():
        match = re.match(r"^\.\.\. (\S+)", line) or re.match(r"^([A-Za-z0-9_.-]+): ", line)
        if match:
            targets.add(match.group(1))
    return targets


_built = {}


def built_files(build):
    """Executable files of the build folder by name: where each target landed (first found)."""
    if not _built:
        for folder, dirs, names in os.walk(build):
            dirs[:] = [d for d in dirs if d != "CMakeFiles" and not d.startswith("_deps")]
            for file_name in names:
                full = os.path.join(folder, file_name)
                if os.access(full, os.X_OK) and file_name not in _built:
                    _built[file_name] = os.path.relpath(full, build)
    return _built


def placeholder(path):
    return any(c in path for c in "<>*{}") or any(re.fullmatch(r"[A-Z][A-Z0-9_]+", part) for part in path.split("/"))


checked = {"paths": 0, "commands": 0}


def check_file(path, build, targets, made, cli, problems):
    text = open(path, encoding="utf-8").read()
    name = os.path.relpath(path, ROOT)
    created = set(m.group(1).rstrip(".,:;)") for m in CREATED_RE.finditer(text))
    for number, line in enumerate(text.splitlines(), 1):
        for match in PATH_RE.finditer(line):
            ref = match.group(1).rstrip(".")
            if placeholder(ref) or ref in created:
                continue
            checked["paths"] += 1
            if ref.startswith("build/"):
                inside = ref[len("build/"):].rstrip("/")
                if os.path.exists(os.path.join(build, inside)) or inside in made:
                    continue
                base = os.path.basename(inside)
                if base in targets:
                    elsewhere = built_files(build).get(base)
                    if elsewhere is None:
                        continue  # a target this build does not make (e.g. benchmarks off): its place is unknown
                    problems.append(f"{name}:{number}: {ref}: the target {base} is built as build/{elsewhere}")
                    continue
                problems.append(f"{name}:{number}: {ref}: no such file in the build folder, nor a CMake target")
            elif not (os.path.exists(os.path.join(ROOT, ref)) or os.path.exists(os.path.join(ROOT, ref + ".xz")) or
                      glob.glob(os.path.join(ROOT, ref) + ".*")):  # src/forecast/layer_model: its .h and .cpp
                problems.append(f"{name}:{number}: {ref}: no such file or folder in the checkout")
    for number, code in code_texts(text):
        for match in COMMAND_RE.finditer(code):
            command, rest = match.group(1), match.group(2).split()
            checked["commands"] += 1
            top = cli.help([command])
            if top is None:
                problems.append(f"{name}:{number}: `dnncast {command}`: not a command (`dnncast {command} --help` fails)")
                continue
            words = [command]
            subcommands = listed_subcommands(top)
            if subcommands:
                sub = next((word for word in rest if not word.startswith("-")), "")
                if sub not in subcommands:
                    problems.append(f"{name}:{number}: `dnncast {command} {sub}`: not a subcommand "
                                    f"(`dnncast {command} --help` lists {', '.join(sorted(subcommands))})")
                    continue
                words.append(sub)
            helptext = cli.help(words)
            for word in rest:
                option = re.match(r"^\[?(--[a-z][a-z0-9-]*)", word)
                if option is None:
                    continue
                flag = option.group(1)
                if flag == "--help" or re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", helptext):
                    continue
                problems.append(f"{name}:{number}: `dnncast {' '.join(words)} {flag}`: not an option of "
                                f"`dnncast {' '.join(words)}` (its --help does not list it)")


def main(argv):
    build = os.path.join(ROOT, "build")
    files = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--build" and args:
            build = args.pop(0)
        elif arg in ("-h", "--help"):
            print(__doc__)
            return 0
        elif arg.startswith("-"):
            print(f"check-docs.py: unknown option '{arg}'", file=sys.stderr)
            return 2
        else:
            files.append(arg)
    if not files:
        files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    binary = os.path.join(build, "dnncast")
    if not os.access(binary, os.X_OK):
        print(f"check-docs.py: {binary} not built (make build, or --build BUILD)", file=sys.stderr)
        return 2
    targets = build_targets(build)
    made = makefile_outputs()
    cli = Cli(binary)
    problems = []
    for path in files:
        check_file(path, build, targets, made, cli, problems)
    for problem in problems:
        print(problem)
    print(f"check-docs: {len(files)} files, {checked['paths']} paths and {checked['commands']} dnncast commands "
          f"checked, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

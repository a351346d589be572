#!/usr/bin/python3
"""Every program a script or test calls comes from a package scripts/setup.sh installs, or from what a fresh
minimal Debian 12 has (debootstrap --variant=minbase: the packages of priority "required", and apt) plus what
the README starts from (a compiler, make, cmake, git, python3, GoogleTest, Google Benchmark).

Reads the shell scripts of scripts/, tests/ and .ci/, and the Makefile's recipes, takes the word in command
position of each command (after |, &&, ||, ;, $( and the like, past variable assignments and wrappers such as
sudo, taskset -c N, timeout N, env, nohup), keeps those that name a program on this machine's PATH and are not
functions of the script, and asks dpkg which package owns each. A program no package owns is named too.

  /usr/bin/python3 scripts/check-tools.py [SCRIPT...]   # exit 1 and one line per program setup.sh does not cover
"""
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# What the README says a machine has before `make test` (the "fresh minimal Debian 12" of issue 37).
README_BASE = {"build-essential", "g++", "gcc", "make", "cmake", "git", "python3", "python3-minimal",
               "libgtest-dev", "libbenchmark-dev", "apt"}
WRAPPERS = {"sudo", "$SUDO", "env", "nohup", "exec", "command", "time", "builtin", "setsid", "nice", "!"}
WRAPPERS_WITH_ARG = {"taskset": 2, "timeout": 1}  # words after the wrapper to skip (taskset -c LIST)
KEYWORDS = {"if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case", "esac",
            "function", "select", "return", "local", "declare", "export", "readonly", "set", "unset", "shift",
            "trap", "wait", "read", "cd", "pushd", "popd", "source", ".", "eval", "exit", "break", "continue",
            "true", "false", "test", "[", "[[", "echo", "printf", "kill", "type", "hash", "ulimit", "umask",
            "getopts", "let", "alias", "jobs", "fg", "bg", "disown", "mapfile", "readarray", "pwd", "{", "}"}
SEPARATORS = re.compile(r"\|\||&&|\||;|\$\(|`|\(|\bthen\b|\bdo\b|\belse\b")
# Programs that no package of setup.sh brings, each with where it comes from instead.
ELSEWHERE = {
    "sbatch": "scripts/slurm-local.sh installs slurm-wlm and munge itself when missing (make test-slurm)",
    "scancel": "the same", "squeue": "the same", "sinfo": "the same", "slurmctld": "the same", "slurmd": "the same",
    "munged": "the same", "scontrol": "the same", "sacct": "the same",
    "debootstrap": "scripts/debian-root-test.sh installs it itself when missing (a maintainer's check, not make test)",
}
# Scripts that run on another machine, not the one `make test` runs on.
ELSEWHERE_SCRIPTS = {"scripts/gpu-profile.sh": "runs on the lent GPU machine (its CUDA image), not here"}


def script_files():
    files = []
    for pattern in ("scripts/*.sh", "scripts/**/*.sh", "tests/**/*.sh", ".ci/run"):
        files += glob.glob(os.path.join(ROOT, pattern), recursive=True)
    fixtures = os.path.join(ROOT, "tests", "docs", "fixtures")  # planted problems of the checkers' own tests
    return sorted(path for path in set(files) if not path.startswith(fixtures))


def makefile_lines():
    """The recipes, with make's own $(...) expansions emptied ($$( is the shell's)."""
    lines = []
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("\t"):
            line = line.strip().lstrip("@-").replace("$$(", "\x00")
            line = re.sub(r"\$\([^()]*(?:\([^()]*\)[^()]*)*\)", "X", line).replace("\x00", "$(")
            lines.extend(shell_text(line))
    return lines


def shell_text(text):
    """The text with quoted strings emptied (they may span lines: awk and Python programs), here-document bodies
    dropped, arithmetic $((...)) and ((...)) emptied, and continued lines joined."""
    lines = heredoc_free(text.splitlines())
    text = "\n".join(lines)
    text = unquoted(text)
    text = re.sub(r"\$?\(\((?:[^()]|\([^()]*\))*\)\)", "0", text)
    text = text.replace("\\\n", " ")
    # Array literals NAME=( ... ) hold words, not commands.
    text = re.sub(r"[A-Za-z_][A-Za-z0-9_]*=\((?:[^()])*\)", "ARRAY=", text)
    return text.splitlines()


def unquoted(text):
    """Comments dropped; single-quoted strings emptied; double-quoted ones emptied but for the command substitutions $(...) in them,
    which hold commands; backslash escapes dropped."""
    out, index, stack = [], 0, ["code"]  # states: code, dq (inside "...")
    depth = []  # parenthesis depth of each $( opened, per nesting level
    while index < len(text):
        char = text[index]
        state = stack[-1]
        if char == "\\":
            index += 2
            continue
        if state == "code":
            if char == "#" and (index == 0 or text[index - 1] in " \t\n;"):  # a comment, to the end of its line
                end = text.find("\n", index)
                index = len(text) if end < 0 else end
                continue
            if char == "'":
                end = text.find("'", index + 1)
                index = len(text) if end < 0 else end + 1
                out.append("''")
                continue
            if char == '"':
                stack.append("dq")
                out.append("Q")  # a word, not a command name (the "$DNNCAST" of "$DNNCAST" train)
            elif char == "(" and depth:
                depth[-1] += 1
                out.append(char)
            elif char == ")" and depth:
                depth[-1] -= 1
                if depth[-1] == 0:  # the end of a $( opened inside double quotes
                    depth.pop()
                    stack.pop()
                out.append(char)
            else:
                out.append(char)
        else:  # dq
            if char == '"':
                stack.pop()
                out.append(" ")
            elif text.startswith("$(", index):
                stack.append("code")
                depth.append(1)
                out.append("$(")
                index += 2
                continue
            else:
                out.append("\n" if char == "\n" else " ")
        index += 1
    return "".join(out)


def heredoc_free(lines):
    """The lines outside here-documents (their bodies are data, or another language)."""
    out, end = [], None
    for line in lines:
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        match = re.search(r"<<-?\s*['\"]?([A-Za-z_]+)['\"]?", line)
        if match:
            end = match.group(1)
        out.append(line)
    return out


def commands_of(line, functions):
    line = line.split(" #")[0]
    found = []
    for part in SEPARATORS.split(line):
        words = part.split()
        while words:
            word = words[0]
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):  # VAR=value before the command
                words = words[1:]
            elif word in WRAPPERS:
                words = words[1:]
            elif word in WRAPPERS_WITH_ARG:
                words = words[1 + WRAPPERS_WITH_ARG[word]:]
            else:
                break
        if not words:
            continue
        word = words[0]
        if word in KEYWORDS or word in functions or not re.match(r"^[a-z][a-z0-9._+-]*$", word):
            continue
        found.append(word)
    return found


def setup_packages():
    with open(os.path.join(ROOT, "scripts", "setup.sh")) as f:
        text = f.read()
    block = re.search(r"PACKAGES=\((.*?)\n\)", text, re.S).group(1)
    return {word for line in block.splitlines() for word in line.split("#")[0].split()}


def owner(path):
    done = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
    if done.returncode != 0:
        real = os.path.realpath(path)
        done = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if done.returncode != 0 and real.startswith("/usr/"):  # merged /usr: dpkg knows /bin/... only
            done = subprocess.run(["dpkg", "-S", real[4:]], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return done.stdout.split(":")[0].split(",")[0].strip()


def priority(package):
    done = subprocess.run(["dpkg-query", "-W", "-f=${Priority}", package], capture_output=True, text=True)
    return done.stdout.strip()


def main():
    extra = sys.argv[1:]  # more scripts to read (tests/docs/fixtures/needs_tools.sh: the checker's own test)
    wanted = {}  # program -> first place
    for path in script_files() + [os.path.abspath(path) for path in extra]:
        if os.path.relpath(path, ROOT) in ELSEWHERE_SCRIPTS:
            continue
        with open(path, errors="replace") as f:
            lines = shell_text(f.read())
        functions = {m.group(1) for line in lines for m in [re.match(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", line)] if m}
        for number, line in enumerate(lines, 1):
            for program in commands_of(line, functions):
                wanted.setdefault(program, f"{os.path.relpath(path, ROOT)}:{number}")
    for number, line in enumerate(makefile_lines(), 1):
        for program in commands_of(line, set()):
            wanted.setdefault(program, "Makefile recipe")
    allowed = setup_packages() | README_BASE
    problems = []
    checked = 0
    for program, where in sorted(wanted.items()):
        if program in ELSEWHERE:
            continue
        location = shutil.which(program, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        if location is None:
            if os.path.exists(os.path.join(ROOT, program)) or program.startswith(("build", "scripts")):
                continue
            problems.append(f"{where}: {program}: not on this machine's PATH and not installed by scripts/setup.sh")
            continue
        checked += 1
        package = owner(location)
        if package is None:
            problems.append(f"{where}: {program} ({location}): no Debian package owns it")
        elif package not in allowed and priority(package) != "required":
            problems.append(f"{where}: {program}: from package {package} (priority {priority(package)}), "
                            "which a minimal Debian 12 lacks and scripts/setup.sh does not install")
    for problem in problems:
        print(problem)
    print(f"check-tools: {checked} programs checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

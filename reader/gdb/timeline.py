# SPDX-License-Identifier: MIT
"""gdb's `timeline` command: the libtimeline timeline of what gdb debugs.

Installed once as <datadir>/core-timeline/gdb/timeline.py (on Debian
/usr/share/core-timeline/gdb/timeline.py).  gdb loads it by itself when it
loads libtimeline.so.1: the auto-load stub
<datadir>/gdb/auto-load/<libdir>/libtimeline.so.<version>-gdb.py imports it
(packaging/CMakeLists.txt writes the stub).  A program linked statically
against libtimeline.a has no such objfile, so there the user runs
`source /usr/share/core-timeline/gdb/timeline.py` (or puts that line in
~/.gdbinit).  docs/gdb.md and docs/man/core-timeline-gdb.7 describe it.

There is one decoder: this file never reads the ring.  It runs
core-timeline-read on what gdb has open, and prints what the reader prints:

  gdb EXE CORE, coredumpctl debug PID
      core-timeline-read [OPTIONS] CORE [EXE]   (the core gdb opened, the
                                                 executable gdb loaded)
  a live process (gdb --args PROG, attach PID), stopped
      core-timeline-read [OPTIONS] --pid PID [EXE]   (a live snapshot of
                                                      the inferior's memory)

The reader is $CORE_TIMELINE_READ when set, else core-timeline-read in the
bin directory of the prefix this file is installed under
(<prefix>/share/core-timeline/gdb -> <prefix>/bin), else the first on $PATH.
A reader's exit status other than 0 becomes a gdb error that carries the
reader's own message and what the status means; $_timeline_exit holds the
status of the last run either way.

Needs gdb 12 or later (gdb.Inferior.connection); Debian 12 has gdb 13.1.
"""

import os
import re
import shutil
import subprocess
import tempfile

import gdb

READER_NAME = "core-timeline-read"

# What core-timeline-read's exit statuses mean (docs/man/core-timeline-read.1,
# EXIT STATUS; reader/cli/core_timeline_read.cc).
EXIT_MEANING = {
    1: "no CTLN mapping found: the process did not use libtimeline",
    2: "timeline mapping absent from the core (coredump_filter, or a truncated core)",
    3: "the core is unreadable, not an ELF core, or has nothing to read",
    4: "the ring is invalid",
    5: "the executable was refused: its build-id does not match the core",
    6: "the sidecar's identity does not match the core",
    7: ("usage error, an unreadable --tlmap file, an unusable --output, or a --save FILE not written (it "
        "exists, without --force, or is not a regular file)"),
    8: "libtimeline was loaded but made no ring",
}
# With --pid, 3 says that no snapshot was taken.
EXIT_MEANING_LIVE = dict(EXIT_MEANING)
EXIT_MEANING_LIVE[3] = ("no snapshot could be taken: no such process, reading its memory was refused "
                        "(the reason names the rule), or it exited during the snapshot")

# The reader's options that this command passes on.  Flags take no value;
# the others take one, as "--opt VALUE" or "--opt=VALUE".  Any other option
# is passed on as it is written (so give a newer reader's options that take
# a value as --opt=VALUE); the reader refuses what it does not know.  CORE,
# EXECUTABLE and --pid come from gdb, never from the user.
FLAGS = ("--json", "--wall-clock", "--by-thread", "--no-symbols",
         "--unverified-symbols", "--core-only", "--force")
VALUED = ("--tlmap", "--sidecar", "--format", "--output", "--save")
FROM_GDB = ("--pid",)

_CORE_LINE = re.compile(r"^Local core dump file:\s*\n\s*`(?P<path>.*)', file type ", re.M)


def find_reader():
    """The core-timeline-read to run, as a path.

    $CORE_TIMELINE_READ when set (it must name an executable file), else
    <prefix>/bin/core-timeline-read beside this file's install prefix, else
    the first core-timeline-read on $PATH.  Raises gdb.GdbError naming where
    it looked when there is none.
    """
    override = os.environ.get("CORE_TIMELINE_READ")
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override
        raise gdb.GdbError("timeline: CORE_TIMELINE_READ=%s is not an executable file" % override)
    beside = os.path.join(MODULE_DIR, os.pardir, os.pardir, os.pardir, "bin", READER_NAME)
    beside = os.path.normpath(beside)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    on_path = shutil.which(READER_NAME)
    if on_path:
        return on_path
    raise gdb.GdbError("timeline: %s not found (not at %s, not on PATH); install core-timeline "
                       "or set CORE_TIMELINE_READ" % (READER_NAME, beside))


# The directory this file is in (<prefix>/share/core-timeline/gdb when
# installed), taken while it loads and made absolute then.  Not from
# __file__: gdb's `source` runs the file as __main__ and removes __file__
# once it has run (and a `source` from inside another sourced script sees
# that script's); the code object's file name is always this file's.
MODULE_DIR = os.path.dirname(os.path.realpath(find_reader.__code__.co_filename))


def core_file_name(info_target):
    """The core file's name in the text of `info target`, or None.

    gdb 13 has no Python API for it; `info target` prints
    "Local core dump file:" and on the next line "\\t`PATH', file type
    elf64-x86-64." (gdb/corelow.c).  gdb keeps the name absolute.
    """
    m = _CORE_LINE.search(info_target)
    return m.group("path") if m else None


def parse_arguments(argv):
    """The reader options in argv (a list of words), checked; a new list.

    Raises gdb.GdbError for a word that is not an option (CORE and
    EXECUTABLE come from gdb), an option that takes a value given none, or
    an option that gdb supplies (--pid).
    """
    out = []
    i = 0
    while i < len(argv):
        word = argv[i]
        name = word.split("=", 1)[0]
        if not word.startswith("-") or word == "-":
            raise gdb.GdbError("timeline: unexpected argument %r: the core and the executable are "
                               "the ones gdb has open (see help timeline)" % word)
        if name in FROM_GDB:
            raise gdb.GdbError("timeline: %s comes from gdb (the inferior's pid)" % name)
        if name in VALUED and "=" not in word:
            if i + 1 >= len(argv):
                raise gdb.GdbError("timeline: %s needs a value" % word)
            out += [word, argv[i + 1]]
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def option_names(options):
    """The names of the options in `options` (a list from
    parse_arguments()), without their values: "--save" for both
    "--save F" and "--save=F"."""
    names = []
    i = 0
    while i < len(options):
        word = options[i]
        name = word.split("=", 1)[0]
        names.append(name)
        i += 2 if name in VALUED and "=" not in word else 1
    return names


def refuse_saving_a_core(options, core):
    """Raises gdb.GdbError when `options` hold --save or --force and gdb has
    the core `core` open: --save keeps a live process's snapshot, a core
    file, and gdb's core is one already (core-timeline-read would only say
    that --save needs --pid, which this command gives only for a process)."""
    names = option_names(options)
    if "--save" in names:
        raise gdb.GdbError("timeline: --save keeps the snapshot of a live process as a core file; gdb has the "
                           "core %s open, which is such a file already (copy it to keep it)" % core)
    if "--force" in names:
        raise gdb.GdbError("timeline: --force lets --save replace its FILE, and --save is for a live process; "
                           "gdb has the core %s open" % core)


def target_arguments():
    """What the reader reads, as arguments: [CORE] or ["--pid", PID], then
    EXE when gdb has loaded an executable, from the selected inferior.

    A core when the inferior's connection is gdb's "core" target, a live
    process when it is "native".  Raises gdb.GdbError when gdb has neither,
    or when the process is on another target (a remote target's pid is not
    a pid of this machine).
    """
    inferior = gdb.selected_inferior()
    connection = inferior.connection
    kind = connection.type if connection is not None else None
    exe = gdb.current_progspace().filename
    exe = [exe] if exe else []
    if kind == "core":
        core = core_file_name(gdb.execute("info target", to_string=True))
        if core is None:
            raise gdb.GdbError("timeline: gdb has a core open but `info target` does not name its file")
        return [core] + exe
    if kind is None or inferior.pid == 0:
        raise gdb.GdbError("timeline: no core file and no process (gdb EXE CORE, "
                           "coredumpctl debug PID, or run or attach a process)")
    if kind != "native":
        raise gdb.GdbError("timeline: the process is on gdb's %s target; only a core or a native "
                           "process can be read" % kind)
    return ["--pid", str(inferior.pid)] + exe


def reader_failure(reader, status, stderr, live=False):
    """The gdb.GdbError for a reader that ended with `status` (as from
    subprocess: negative for a signal); `live` when it was run with --pid.

    Its message is the reader's own "core-timeline-read: REASON" line (the
    last, if several) and what the status means.  When stderr has no such
    line (a usage error is CLI11's text), stderr is first written to gdb's
    stderr as it is, and the message points to it.
    """
    prefix = os.path.basename(reader) + ": "
    reasons = [l for l in stderr.splitlines() if l.startswith(prefix)]
    if reasons:
        said = reasons[-1]
    elif stderr.strip():
        gdb.write(stderr if stderr.endswith("\n") else stderr + "\n", gdb.STDERR)
        said = "%s failed (its stderr is above)" % reader
    else:
        said = "%s failed and printed no reason" % reader
    if status < 0:
        return gdb.GdbError("%s (killed by signal %d)" % (said, -status))
    meanings = EXIT_MEANING_LIVE if live else EXIT_MEANING
    meaning = meanings.get(status, "a status core-timeline-read does not document")
    return gdb.GdbError("%s (exit %d: %s)" % (said, status, meaning))


def run_reader(arguments):
    """Runs the reader with `arguments` and writes what it prints on stdout
    to gdb's stdout as it comes (gdb's pager applies: quitting it ends the
    reader).

    Sets $_timeline_exit to the reader's exit status.  Raises gdb.GdbError
    when the status is not 0, after what the reader printed (on a failure
    its text is one "core-timeline: REASON" line, and the crash line when
    the core has one).
    """
    reader = find_reader()
    argv = [reader] + arguments
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                    encoding="utf-8", errors="replace")
        except OSError as e:
            raise gdb.GdbError("timeline: cannot run %s: %s" % (reader, e.strerror))
        try:
            for line in proc.stdout:
                gdb.write(line)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        status = proc.wait()
        gdb.set_convenience_variable("_timeline_exit", status)
        err.seek(0)
        stderr = err.read()
    if status != 0:
        raise reader_failure(reader, status, stderr, live="--pid" in arguments)


class TimelineCommand(gdb.Command):
    """Print the libtimeline timeline of the core or process gdb debugs.

Usage: timeline [--json] [--wall-clock] [--by-thread] [--tlmap FILE]
                [--no-symbols] [--unverified-symbols] [--core-only]
                [--sidecar FILE] [--save FILE [--force]]
                [OTHER-READER-OPTION...]

The last events the program recorded with libtimeline (its marks, spans,
and optionally allocations and I/O), each with its age relative to the
crash, its thread and the code it was recorded at; the spans open at the
crash; and the crash itself.  For a core (gdb EXE CORE, coredumpctl debug
PID) this runs core-timeline-read on the core gdb has open, with the
executable gdb has loaded; for a live process under gdb (stopped at a
breakpoint, or attached) it runs core-timeline-read --pid PID, which reads
the ring from the process's memory: the events recorded so far, with ages
relative to the snapshot.  The options are core-timeline-read's (see
core-timeline-read(1)):

  --json                one JSON document (docs/timeline-json.md)
  --wall-clock          wall-clock times instead of ages
  --by-thread           events grouped by thread
  --tlmap FILE          names for user event ids ("0x1001 REQ_PARSE" lines)
  --no-symbols          raw module+offset locations only
  --unverified-symbols  also symbolize modules without a build-id
  --core-only           ignore any sidecar
  --sidecar FILE        merge a sidecar copy of the ring (degraded mode)
  --save FILE [--force] a live process: also keep the snapshot, an ELF core
                        (refused on a core: it is such a file already)

An option not listed is passed on as written (--opt=VALUE for one that
takes a value).  The reader is $CORE_TIMELINE_READ if set, else the one
installed beside this command, else core-timeline-read on PATH.  When the
reader fails, its message and the meaning of its exit status are shown as
a gdb error; $_timeline_exit holds its exit status.  See
core-timeline-gdb(7)."""

    def __init__(self):
        super().__init__("timeline", gdb.COMMAND_STATUS, gdb.COMPLETE_FILENAME)

    def invoke(self, argument, from_tty):
        options = parse_arguments(gdb.string_to_argv(argument))
        target = target_arguments()
        if target[0] != "--pid":
            refuse_saving_a_core(options, target[0])
        run_reader(options + target)


TimelineCommand()

//! The commands the compiler knows read some of their arguments as code: shells and
//! interpreters, the commands that run another command (`env`, `sudo`, `xargs`,
//! `find -exec`), and those with a code option or subcommand (`git -c`, `docker exec`).
//! One table; `resolve` reads it. A command not listed here reads its arguments as
//! data.

/// What a command's options are.
pub(super) struct Opts {
    /// Options whose argument is data (`-u USER`, `--user USER`, `--user=USER`).
    pub arg: &'static [&'static str],
    /// Options whose argument is the program (`-e CODE`, `-f FILE`): no operand is.
    pub code: &'static [&'static str],
    /// Options whose argument is code, or names code to load, besides the program
    /// (`-M MODULE`, `-r FILE`, `ssh -o ProxyCommand=...`).
    pub loads: &'static [&'static str],
    /// Options taking two arguments, both data (`jq --arg NAME VALUE`).
    pub two: &'static [&'static str],
    /// Options after which every argument is code (`sudo -s`).
    pub rest: &'static [&'static str],
    /// Options that make the command put its input into its command's arguments
    /// (`xargs -I {}`).
    pub replace: &'static [&'static str],
    /// The option whose argument names a module run as a command (`python -m pip`).
    pub module: Option<&'static str>,
}

const NONE: Opts = Opts {
    arg: &[],
    code: &[],
    loads: &[],
    two: &[],
    rest: &[],
    replace: &[],
    module: None,
};

/// What a command's operands (its arguments that are not options) are.
pub(super) enum Operands {
    /// Data; a value leading a word may be read as an option.
    Data,
    /// Data never read as an option (`for`'s list).
    Plain,
    /// The first is a format (data, maybe an option); the rest are never options.
    Format,
    /// The first is the program: a file (`python script.py`), or with `text` the
    /// program itself (`awk '{print}'`), unless a code option gave the program.
    Program { text: bool },
    /// A shell: with `-c` the first is code, with `-s` all are data, else the first
    /// is the script file.
    Shell,
    /// `before` operands (timeout's duration), then a command it runs; `shell`: with
    /// no command it runs a shell (`chroot DIR`).
    Command { before: usize, shell: bool },
    /// Every operand is code; the phrase says why.
    Code(&'static str),
    /// One operand (a host, a user, a database), then code; the phrase says whose.
    Remote(&'static str),
    /// A subcommand, then its own options and operands.
    Sub(&'static [(&'static str, &'static Spec)]),
    /// `declare`, `export`, ...: `NAME=value` holds data, anything else may be evaluated.
    Declare,
    /// `find`: `-exec` and its kin start a command that ends at `;` or `+`.
    Find,
}

pub(super) struct Spec {
    pub names: &'static [&'static str],
    pub opts: Opts,
    pub operands: Operands,
    /// It reads code from its standard input unless an option gives it some
    /// (`psql`, `parallel`); shells and interpreters say so by their operands.
    pub stdin: bool,
    /// A word starting with `+` is code (`vim +CMD`).
    pub plus: bool,
    /// It puts its input into its command's arguments (`xargs`).
    pub feeds: bool,
}

const fn spec(names: &'static [&'static str], opts: Opts, operands: Operands) -> Spec {
    Spec {
        names,
        opts,
        operands,
        stdin: false,
        plus: false,
        feeds: false,
    }
}

const fn reads_stdin(mut s: Spec) -> Spec {
    s.stdin = true;
    s
}

const fn code(names: &'static [&'static str], why: &'static str) -> Spec {
    spec(names, NONE, Operands::Code(why))
}

/// Data, with options whose argument is code (`git -c`, `tar --to-command`).
const fn loads(names: &'static [&'static str], loads: &'static [&'static str]) -> Spec {
    spec(names, Opts { loads, ..NONE }, Operands::Data)
}

/// The operands of a command not in the table, or of a subcommand not listed.
pub(super) const DATA: Spec = spec(&[], NONE, Operands::Data);

const PROGRAM: Operands = Operands::Program { text: false };
const TEXT: Operands = Operands::Program { text: true };
const RUNS_COMMAND: Operands = Operands::Command {
    before: 0,
    shell: false,
};
const RUNS: &str = "runs its arguments as code";
const INSTALLS: &str = "installs or runs the package its arguments name, and its code";

const RUNS_ALL: Spec = code(&[], RUNS);
const WRAPPER: Spec = spec(&[], NONE, RUNS_COMMAND);
const INSTALL: Spec = code(&[], INSTALLS);
const IN_CONTAINER: Spec = reads_stdin(code(&[], "runs its arguments as a command in a container"));
const FILE_PROGRAM: Spec = spec(&[], NONE, PROGRAM);
const TEXT_PROGRAM: Spec = spec(&[], NONE, TEXT);
const GIT_CONFIG: Spec = code(
    &[],
    "stores values that git runs (an alias starting with `!`, `core.sshCommand`, hooks)",
);
const CONTAINER_SUBS: &[(&str, &Spec)] = &[
    ("exec", &IN_CONTAINER),
    ("run", &IN_CONTAINER),
    ("create", &IN_CONTAINER),
];
const DOCKER_INNER: Spec = spec(&[], NONE, Operands::Sub(CONTAINER_SUBS));
const MANIFEST: Spec = code(
    &[],
    "deploys what its arguments name, containers that run code",
);

/// The table. Names are matched on a command's last path component, and again with
/// a version suffix taken off (`python3.12`, `perl5.36`). Options not listed are
/// flags; `arg` options take a data argument.
#[rustfmt::skip]
pub(super) static COMMANDS: &[Spec] = &[
    // Shells: `-c` makes the first operand code, else it is the script file; with
    // none, or `-s`, the script is the input.
    spec(&["sh", "bash", "dash", "ash", "ksh", "ksh93", "mksh", "pdksh", "lksh", "zsh", "yash",
           "posh", "rbash", "csh", "tcsh"],
         Opts { arg: &["-o", "+o", "-O", "+O"], loads: &["--rcfile", "--init-file"], ..NONE },
         Operands::Shell),
    spec(&["fish"], Opts { code: &["-c", "--command"], loads: &["-C", "--init-command"], ..NONE },
         PROGRAM),
    reads_stdin(code(&["pwsh", "powershell"], RUNS)),
    // Interpreters: a code option gives the program, else the first operand is its file.
    spec(&["python", "python2", "python3", "pypy", "pypy3"],
         Opts { code: &["-c", "-m"], arg: &["-W", "-X", "-Q"], module: Some("-m"), ..NONE },
         PROGRAM),
    spec(&["perl"], Opts { code: &["-e", "-E"], loads: &["-M", "-m", "-I", "-d"], ..NONE }, PROGRAM),
    spec(&["ruby", "jruby"],
         Opts { code: &["-e"], loads: &["-r", "-I", "--require"], arg: &["-C", "-E", "--encoding"],
                ..NONE },
         PROGRAM),
    spec(&["node", "nodejs", "ts-node", "tsx"],
         Opts { code: &["-e", "--eval", "-p", "--print"],
                loads: &["-r", "--require", "--import", "--loader", "--experimental-loader"],
                ..NONE },
         PROGRAM),
    spec(&["deno"], NONE, Operands::Sub(&[("eval", &RUNS_ALL), ("run", &FILE_PROGRAM)])),
    spec(&["bun"],
         Opts { code: &["-e", "--eval", "-p", "--print"], loads: &["-r", "--preload"], ..NONE },
         Operands::Sub(&[("run", &FILE_PROGRAM), ("x", &INSTALL), ("add", &INSTALL),
                         ("install", &INSTALL), ("i", &INSTALL), ("create", &INSTALL),
                         ("exec", &RUNS_ALL)])),
    spec(&["php"],
         Opts { code: &["-r", "-B", "-R", "-F", "-E", "-f"], loads: &["-d", "-c", "-z"], ..NONE },
         PROGRAM),
    spec(&["lua", "luajit"], Opts { loads: &["-e", "-l"], ..NONE }, PROGRAM),
    spec(&["Rscript"], Opts { code: &["-e", "--file"], ..NONE }, PROGRAM),
    reads_stdin(spec(&["R"], Opts { code: &["-e", "-f", "--file"], ..NONE }, Operands::Data)),
    spec(&["osascript"], Opts { code: &["-e"], arg: &["-l", "-s"], ..NONE }, PROGRAM),
    spec(&["tclsh", "wish", "jimsh", "expect"], Opts { code: &["-f"], loads: &["-c"], ..NONE },
         PROGRAM),
    spec(&["source", "."], NONE, PROGRAM),
    // Program text: the first operand is the program, unless an option gave one.
    spec(&["awk", "gawk", "mawk", "nawk", "busybox-awk"],
         Opts { code: &["-f", "--file", "-e", "--source", "-E", "--exec"],
                loads: &["-i", "--include", "-l", "--load"],
                arg: &["-v", "--assign", "-F", "--field-separator"], ..NONE },
         TEXT),
    spec(&["sed", "gsed"],
         Opts { code: &["-e", "--expression", "-f", "--file"], arg: &["-l", "--line-length"],
                ..NONE },
         TEXT),
    spec(&["jq", "gojq", "jaq"],
         Opts { code: &["-f", "--from-file"], loads: &["-L"], arg: &["--indent"],
                two: &["--arg", "--argjson", "--slurpfile", "--rawfile"], ..NONE },
         TEXT),
    spec(&["yq"], NONE, Operands::Sub(&[("eval", &TEXT_PROGRAM), ("e", &TEXT_PROGRAM),
                                        ("eval-all", &TEXT_PROGRAM), ("ea", &TEXT_PROGRAM)])),
    spec(&["trap"], NONE, TEXT),
    // Every argument is code.
    code(&["eval"], RUNS),
    code(&["let"], "evaluates its arguments as arithmetic (where `a[$(cmd)]` runs cmd)"),
    code(&["[["], "evaluates the operands of `-eq` and its kin as arithmetic (where `a[$(cmd)]` runs cmd)"),
    code(&["alias"], "defines commands from its arguments"),
    code(&["compgen", "complete", "bind", "fc"],
         "runs, or expands as a shell would, commands its arguments hold"),
    code(&["enable"], "loads builtins from the files its arguments name"),
    code(&["unset", "read", "mapfile", "readarray", "getopts"],
         "reads its arguments as variable names, whose subscripts bash evaluates"),
    reads_stdin(code(&["parallel"], RUNS)),
    code(&["watch"], "has a shell run its arguments"),
    reads_stdin(code(&["gdb", "lldb"], RUNS)),
    reads_stdin(code(&["at", "batch", "crontab"], RUNS)),
    code(&["coproc", "tmux", "screen", "systemd-run", "bwrap", "firejail", "unshare", "nsenter", "proot",
           "xvfb-run", "dbus-run-session", "start-stop-daemon", "daemonize"],
         "runs a command made of its arguments, whose options the compiler does not follow"),
    code(&["npx", "bunx", "uvx", "pnpx"], INSTALLS),
    spec(&["make", "gmake"],
         Opts { arg: &["-C", "--directory", "-j", "--jobs", "-l", "-o", "-W"],
                loads: &["-f", "--file", "--makefile", "-I", "--include-dir", "--eval", "-E"],
                ..NONE },
         Operands::Code("reads an argument holding `=` as a variable, whose value can run commands")),
    // Commands that run a command: its options, then the command.
    spec(&["env"], Opts { arg: &["-u", "--unset", "-C", "--chdir", "-a", "--argv0", "-P"],
                          loads: &["-S", "--split-string"], ..NONE },
         RUNS_COMMAND),
    spec(&["sudo"],
         Opts { arg: &["-u", "-g", "-c", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R",
                       "--user", "--group", "--host", "--prompt", "--close-from", "--chdir",
                       "--role", "--type", "--other-user", "--command-timeout", "--chroot"],
                rest: &["-s", "-i", "--shell", "--login"], ..NONE },
         RUNS_COMMAND),
    spec(&["doas"], Opts { arg: &["-u", "-C"], rest: &["-s"], ..NONE }, RUNS_COMMAND),
    spec(&["pkexec"], Opts { arg: &["--user"], ..NONE }, RUNS_COMMAND),
    spec(&["exec", "command", "builtin", "nohup", "setsid", "busybox", "toybox", "catchsegv",
           "unbuffer", "valgrind"],
         Opts { arg: &["-a"], ..NONE }, RUNS_COMMAND),
    spec(&["time"], Opts { arg: &["-f", "-o", "--format", "--output"], ..NONE }, RUNS_COMMAND),
    spec(&["stdbuf"], Opts { arg: &["-i", "-o", "-e", "--input", "--output", "--error"], ..NONE },
         RUNS_COMMAND),
    spec(&["nice"], Opts { arg: &["-n", "--adjustment"], ..NONE }, RUNS_COMMAND),
    spec(&["ionice"],
         Opts { arg: &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid", "--pgid",
                       "--uid"], ..NONE },
         RUNS_COMMAND),
    spec(&["strace", "ltrace"],
         Opts { arg: &["-o", "-e", "-p", "-s", "-P", "-u", "-E", "-a", "-b", "-I", "-O", "-S",
                       "-X", "-n", "-A", "-D", "-F", "-l", "-L", "-x", "-U", "-w",
                       "--output", "--trace", "--signal", "--status", "--attach", "--trace-path",
                       "--string-limit", "--summary-sort-by", "--summary-columns", "--user",
                       "--env", "--columns", "--detach-on", "--trace-fds", "--inject", "--fault",
                       "--const-print-style", "--library", "--config", "--indent"], ..NONE },
         RUNS_COMMAND),
    spec(&["timeout"], Opts { arg: &["-s", "--signal", "-k", "--kill-after"], ..NONE },
         Operands::Command { before: 1, shell: false }),
    spec(&["chrt"],
         Opts { arg: &["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"],
                ..NONE },
         Operands::Command { before: 1, shell: false }),
    spec(&["taskset"], NONE, Operands::Command { before: 1, shell: false }),
    spec(&["flock"],
         Opts { arg: &["-w", "--timeout", "--wait", "-E", "--conflict-exit-code"],
                code: &["-c", "--command"], ..NONE },
         Operands::Command { before: 1, shell: false }),
    spec(&["chroot"], Opts { arg: &["--userspec", "--groups"], ..NONE },
         Operands::Command { before: 1, shell: true }),
    Spec { feeds: true, ..spec(
        &["xargs"],
        // `--replace[=R]`, `--eof[=E]`, `-i[R]`, `-e[E]`, `-l[N]` take an argument only
        // joined to them: the next word is the command.
        Opts { arg: &["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter",
                      "--max-lines", "--max-args", "--max-procs", "--max-chars",
                      "--process-slot-var"],
               replace: &["-I", "-i", "--replace", "-J"], ..NONE },
        RUNS_COMMAND) },
    spec(&["find"], NONE, Operands::Find),
    // A host, user or database, then code.
    spec(&["ssh", "slogin"],
         Opts { arg: &["-B", "-b", "-c", "-D", "-E", "-e", "-I", "-i", "-J", "-L", "-l", "-m", "-O",
                       "-p", "-Q", "-R", "-S", "-W", "-w"],
                loads: &["-o", "-F"], ..NONE },
         Operands::Remote("in the command `ssh` has a shell on the remote host run")),
    spec(&["su", "runuser"],
         Opts { arg: &["-u", "-g", "-G", "-w", "--user", "--group", "--supp-group",
                       "--whitelist-environment"],
                code: &["-c", "--command", "--session-command", "-C"],
                loads: &["-s", "--shell"], ..NONE },
         Operands::Remote("in the arguments `su` hands to the user's shell")),
    spec(&["sg"], Opts { code: &["-c"], ..NONE },
         Operands::Remote("in the command `sg` has a shell run")),
    spec(&["sqlite3"], Opts { loads: &["-cmd", "-init"], ..NONE },
         Operands::Remote("in the SQL and dot-commands `sqlite3` runs (`.shell` runs commands)")),
    reads_stdin(spec(&["psql"], Opts { code: &["-c", "--command", "-f", "--file"], ..NONE },
                     Operands::Data)),
    reads_stdin(spec(&["mysql", "mariadb"],
                     Opts { code: &["-e", "--execute"], loads: &["--init-command"], ..NONE },
                     Operands::Data)),
    // A code option among data.
    spec(&["script"],
         Opts { code: &["-c", "--command"],
                arg: &["-t", "-T", "-I", "-O", "-B", "-E", "--timing", "--log-in", "--log-out"],
                ..NONE },
         Operands::Data),
    spec(&["scp"], Opts { loads: &["-o", "-F", "-S"], arg: &["-P", "-i", "-l", "-c", "-J", "-X"],
                          ..NONE },
         Operands::Data),
    spec(&["sftp"], Opts { loads: &["-o", "-F", "-S", "-b", "-D"],
                           arg: &["-P", "-i", "-l", "-c", "-J", "-B", "-R", "-X"], ..NONE },
         Operands::Data),
    loads(&["rsync"], &["-e", "--rsh", "--rsync-path"]),
    spec(&["tar", "gtar", "bsdtar"],
         Opts { loads: &["-I", "--use-compress-program", "--to-command", "--checkpoint-action",
                         "--info-script", "-F", "--new-volume-script", "--rsh-command",
                         "--rmt-command"],
                arg: &["-f", "-C", "--file", "--directory", "-T", "-X"], ..NONE },
         Operands::Data),
    loads(&["zip"], &["-TT", "--unzip-command"]),
    loads(&["man"], &["-P", "--pager", "-H", "--html"]),
    Spec { plus: true, ..loads(&["less"], &[]) },
    loads(&["wget"], &["-e", "--execute"]),
    Spec { plus: true, ..loads(&["vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim"],
                               &["-c", "--cmd", "-S", "-u", "-U"]) },
    loads(&["emacs"], &["--eval", "-l", "--load", "-f", "--funcall", "--script"]),
    // Subcommands.
    spec(&["git"],
         Opts { arg: &["-C", "--work-tree", "--namespace"],
                loads: &["-c", "--config-env", "--git-dir", "--exec-path"], ..NONE },
         Operands::Sub(&[
             ("config", &GIT_CONFIG),
             ("submodule", &spec(&[], NONE, Operands::Sub(&[("foreach", &RUNS_ALL)]))),
             ("bisect", &spec(&[], NONE, Operands::Sub(&[("run", &WRAPPER)]))),
             ("rebase", &loads(&[], &["-x", "--exec"])),
             ("difftool", &loads(&[], &["-x", "--extcmd", "-t", "--tool"])),
             ("mergetool", &loads(&[], &["-t", "--tool"])),
             ("clone", &loads(&[], &["-u", "--upload-pack", "-c", "--config", "--template"])),
             ("fetch", &loads(&[], &["--upload-pack"])),
             ("pull", &loads(&[], &["--upload-pack"])),
             ("ls-remote", &loads(&[], &["--upload-pack"])),
             ("archive", &loads(&[], &["--exec"])),
             ("push", &loads(&[], &["--receive-pack", "--exec"])),
             ("grep", &loads(&[], &["-O", "--open-files-in-pager"])),
             ("filter-branch", &RUNS_ALL),
             ("send-email", &RUNS_ALL),
         ])),
    spec(&["docker", "podman", "nerdctl"], NONE,
         Operands::Sub(&[("exec", &IN_CONTAINER), ("run", &IN_CONTAINER), ("create", &IN_CONTAINER),
                         ("container", &DOCKER_INNER), ("compose", &DOCKER_INNER)])),
    spec(&["kubectl", "oc"], NONE,
         Operands::Sub(&[("exec", &IN_CONTAINER), ("run", &IN_CONTAINER), ("debug", &IN_CONTAINER),
                         ("attach", &IN_CONTAINER), ("apply", &MANIFEST), ("create", &MANIFEST),
                         ("replace", &MANIFEST)])),
    spec(&["npm", "pnpm", "yarn"], NONE,
         Operands::Sub(&[("exec", &INSTALL), ("x", &INSTALL), ("dlx", &INSTALL),
                         ("install", &INSTALL), ("i", &INSTALL), ("add", &INSTALL),
                         ("create", &INSTALL), ("init", &INSTALL)])),
    spec(&["pip", "pip3", "pipx", "uv", "gem", "cargo"], NONE,
         Operands::Sub(&[("install", &INSTALL), ("run", &INSTALL), ("tool", &INSTALL),
                         ("pip", &INSTALL), ("add", &INSTALL), ("runpip", &INSTALL)])),
    spec(&["go"], NONE,
         Operands::Sub(&[("install", &INSTALL), ("get", &INSTALL), ("generate", &INSTALL),
                         ("run", &FILE_PROGRAM)])),
    // Builtins that may evaluate what they are given.
    spec(&["declare", "typeset", "local", "export", "readonly"], NONE, Operands::Declare),
    spec(&["printf"], Opts { loads: &["-v"], ..NONE }, Operands::Format),
    // Data never read as an option (`echo`'s options only change how it prints).
    spec(&["for", "case", "select", "echo"], NONE, Operands::Plain),
    // `test -v 'a[$(cmd)]'`: bash evaluates the subscript.
    loads(&["test", "["], &["-v"]),
    loads(&["hash"], &["-p"]),
];

/// The entry for a command word: its last path component, then that without a
/// version suffix.
pub(super) fn lookup(word: &str) -> Option<&'static Spec> {
    let name = word.rsplit('/').next().unwrap_or(word);
    let find = |n: &str| COMMANDS.iter().find(|s| s.names.contains(&n));
    find(name).or_else(|| {
        let bare = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        (!bare.is_empty() && bare != name)
            .then(|| find(bare))
            .flatten()
    })
}

/// Variables whose value makes a program run or load code: a value may not be
/// assigned to them (`LD_PRELOAD={{x}} cmd`).
#[rustfmt::skip]
const CODE_VARS: &[&str] = &[
    "PATH", "BASH_ENV", "ENV", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "IFS", "CDPATH",
    "GLOBIGNORE", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "PERL5OPT",
    "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "BROWSER",
    "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "SUDO_ASKPASS", "RSYNC_RSH", "MAKEFLAGS", "CC", "CXX",
    "TAR_OPTIONS", "HOME", "XDG_CONFIG_HOME", "ZDOTDIR", "RUSTC_WRAPPER", "RUSTFLAGS",
    // Prompts bash expands (`$(cmd)` included), the shell programs run, and files or
    // strings of code other programs load.
    "PS0", "PS1", "PS2", "SHELL", "FPATH", "FCEDIT", "SUDO_EDITOR", "SYSTEMD_EDITOR", "MANOPT",
    "LESS", "GCONV_PATH", "OPENSSL_CONF", "OPENSSL_ENGINES", "EXINIT", "VIMINIT", "GVIMINIT",
    "MYVIMRC", "MAKEFILES", "AWKPATH", "AWKLIBPATH", "PERL5DB", "PYTHONBREAKPOINT",
    "PYTHONWARNINGS", "RSYNC_CONNECT_PROG", "CVS_RSH", "SVN_SSH", "KUBECONFIG", "DOCKER_CONFIG",
    "AWS_CONFIG_FILE", "BUNDLE_GEMFILE", "HGRCPATH", "HGEDITOR",
];

/// Prefixes of such variables (`LD_PRELOAD`, `GIT_SSH_COMMAND`, `BASH_FUNC_f%%`,
/// `LUA_INIT`), matched whatever their case (npm reads `npm_config_script_shell`).
const CODE_VAR_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_",
    "BASH_FUNC_",
    "PIP_",
    "NPM_CONFIG_",
    "CARGO_",
    "LUA_",
];

pub(super) fn code_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CODE_VARS.contains(&name) || CODE_VAR_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// The option of `opts` that `head` (a whole `--long` option, or a GNU abbreviation of
/// one: `--to-com` for `--to-command`) names; where an abbreviation could stand for
/// several, the one that reads code, as the most the command could make of it.
pub(super) fn long_option(opts: &Opts, head: &str) -> Option<&'static str> {
    let lists = [
        opts.code,
        opts.loads,
        opts.rest,
        opts.replace,
        opts.two,
        opts.arg,
    ];
    let exact = lists.iter().flat_map(|l| l.iter()).find(|o| **o == head);
    if exact.is_some() || !head.starts_with("--") || head.len() < 3 {
        return exact.copied();
    }
    lists
        .iter()
        .flat_map(|l| l.iter())
        .find(|o| o.starts_with("--") && o.starts_with(head))
        .copied()
}

/// The option of `opts` written as several letters after one dash (`-TT`, `-cmd`) that
/// begins `text` with its argument joined (`-TTcmd`, `-TT=cmd`).
pub(super) fn joined_option(opts: &Opts, text: &str) -> Option<&'static str> {
    [opts.code, opts.loads]
        .iter()
        .flat_map(|l| l.iter())
        .find(|o| !o.starts_with("--") && o.len() > 2 && text.starts_with(**o))
        .copied()
}

/// Files that are a command's standard input.
pub(super) const STDIN_FILES: &[&str] = &["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

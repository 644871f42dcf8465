# Sourced (not run) by the scripts that start servers and helpers: every process they start is stopped by its PID
# when the script ends — at the end, on a failure (set -e), on Ctrl-C (SIGINT) and on SIGTERM.
#
#   processes_init FILE   keep the PIDs in FILE (a file, so a process started in a subshell — $(…) — is tracked too),
#                         and trap EXIT (INT and TERM exit 130 and 143, which runs the EXIT trap once)
#   track PID [group]     after starting something in the background: track "$!". With "group", the process leads a
#                         process group of its own (it calls setsid before exec): a server that forks workers
#                         (Kamailio) is stopped with its whole group — also workers left behind by a leader that died.
#   at_exit 'COMMAND'     a clean-up step for the EXIT trap, run after every tracked process is stopped (call it in
#                         the script's own shell, not in a subshell)
#   stop_tracked          stop every tracked process now (the EXIT trap does it too), newest first: SIGTERM, up to
#                         5 s for it and its group to go, then SIGKILL
#
# A PID is recorded with its start time (/proc/PID/stat), so a PID the kernel has handed to another process since is
# never signalled.

_processes_file=""
_processes_steps=()

processes_init() {
    _processes_file="$1"
    : >>"$_processes_file"
    trap _processes_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# The start time of PID (clock ticks since boot), or nothing when it is gone.
_processes_start_time() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    stat=${stat##*) }
    # shellcheck disable=SC2086
    set -- $stat
    echo "${20}"
}

track() {
    [ -n "$_processes_file" ] || { echo "processes.bash: track before processes_init" >&2; return 1; }
    echo "$1 ${2:-single} $(_processes_start_time "$1")" >>"$_processes_file"
}

at_exit() { _processes_steps+=("$1"); }

# Whether PID runs (a zombie does not).
_processes_alive() {
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [[ "$state" != Z* ]]
}

# Whether any process of process group GROUP runs.
_processes_group_alive() {
    local pid
    for pid in $(pgrep -g "$1" 2>/dev/null); do _processes_alive "$pid" && return 0; done
    return 1
}

_processes_stop() {  # PID single|group START_TIME
    local pid=$1 group="" running=0
    [ "$2" = group ] && group=$pid
    [ -n "${3:-}" ] && [ "$(_processes_start_time "$pid")" = "$3" ] && running=1
    if [ "$running" -eq 1 ]; then
        kill -TERM "$pid" 2>/dev/null || true
    elif [ -n "$group" ] && _processes_group_alive "$group"; then
        # The leader is gone, its workers are not (the kernel never gives a live group's id to a new process).
        kill -TERM -- "-$group" 2>/dev/null || true
    else
        return 0
    fi
    for _ in $(seq 50); do
        if { [ "$running" -eq 1 ] && _processes_alive "$pid"; } || { [ -n "$group" ] && _processes_group_alive "$group"; }; then
            sleep 0.1
        else
            break
        fi
    done
    if [ "$running" -eq 1 ] && _processes_alive "$pid"; then
        echo "$(basename "$0"): PID $pid did not stop on SIGTERM within 5 s: SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    if [ -n "$group" ] && _processes_group_alive "$group"; then
        echo "$(basename "$0"): process group $group outlived SIGTERM: SIGKILL" >&2
        kill -KILL -- "-$group" 2>/dev/null || true
    fi
    [ "$running" -eq 0 ] || wait "$pid" 2>/dev/null || true
}

stop_tracked() {
    [ -n "$_processes_file" ] && [ -f "$_processes_file" ] || return 0
    local entries entry
    mapfile -t entries < <(tac "$_processes_file")
    for entry in "${entries[@]}"; do
        # shellcheck disable=SC2086
        _processes_stop $entry
    done
    : >"$_processes_file"
}

_processes_exit() {
    local status=$? step
    stop_tracked
    for step in "${_processes_steps[@]}"; do eval "$step" || true; done
    exit "$status"
}

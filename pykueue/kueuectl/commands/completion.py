"""Shell completion: ``completion bash|zsh|fish|powershell`` and the ``__complete`` protocol.

The scripts are small and call back ``kubectl-kueue __complete WORDS... CURRENT``, which
prints one candidate per line (``value<TAB>description``) and a last line ``:<directive>``,
the protocol kueuectl's scripts speak (so either side's scripts work with the other). It
completes commands, flags, and the names of queues, Workloads, namespaces and kubeconfig
contexts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykueue.kueuectl import kubeconfig
from pykueue.kueuectl.cli import Command, Flag, Invocation, find, parse_flags
from pykueue.kueuectl.commands.common import KUEUE_API, client, config_flags, current_namespace
from pykueue.kueuectl.transport import ApiError

DEFAULT, ERROR, NO_FILE = 0, 1, 4
_DIRECTIVE_NAMES = {1: "ShellCompDirectiveError", 2: "ShellCompDirectiveNoSpace",
                    4: "ShellCompDirectiveNoFileComp", 8: "ShellCompDirectiveFilterFileExt",
                    16: "ShellCompDirectiveFilterDirs",
                    32: "ShellCompDirectiveKeepOrder"}
LIMIT = 100
Result = tuple[list[str], int]


def directive_name(directive: int) -> str:
    if directive == 0:
        return "ShellCompDirectiveDefault"
    return ", ".join(name for bit, name in _DIRECTIVE_NAMES.items() if directive & bit)


# -- value completers ---------------------------------------------------------------------------

def _names(items: list[dict[str, Any]]) -> list[str]:
    return [str((item.get("metadata") or {}).get("name", "")) for item in items]


def _stopped(item: dict[str, Any]) -> bool:
    return ((item.get("spec") or {}).get("stopPolicy") or "None") != "None"


def namespaces(inv: Invocation, _: str) -> Result:
    try:
        return _names(client(inv).get("/api/v1/namespaces", {"limit": LIMIT}).get("items") or []), NO_FILE
    except (ApiError, kubeconfig.ConfigError):
        return [], ERROR


def _kubeconfig_names(section: str) -> Callable[[Invocation, str], Result]:
    def complete(inv: Invocation, prefix: str) -> Result:
        try:
            names = kubeconfig.names(config_flags(inv), section)
        except kubeconfig.ConfigError:
            return [], NO_FILE
        return [n for n in names if n.startswith(prefix)], NO_FILE
    return complete


Completer = Callable[[Invocation, str], Result]


def cluster_queues(active: bool | None, *, first_arg_only: bool = True) -> Completer:
    def complete(inv: Invocation, _: str) -> Result:
        if first_arg_only and inv.args:
            return [], NO_FILE
        try:
            items = client(inv).get(f"{KUEUE_API}/clusterqueues", {"limit": LIMIT}).get("items") or []
        except (ApiError, kubeconfig.ConfigError):
            return [], ERROR
        return _names([i for i in items if active is None or _stopped(i) != active]), NO_FILE
    return complete


def local_queues(active: bool | None, *, first_arg_only: bool = True) -> Completer:
    def complete(inv: Invocation, _: str) -> Result:
        if first_arg_only and inv.args:
            return [], NO_FILE
        try:
            path = f"{KUEUE_API}/namespaces/{current_namespace(inv)}/localqueues"
            items = client(inv).get(path, {"limit": LIMIT}).get("items") or []
        except (ApiError, kubeconfig.ConfigError):
            return [], ERROR
        return _names([i for i in items if active is None or _stopped(i) != active]), NO_FILE
    return complete


def workloads(active: bool | None) -> Callable[[Invocation, str], Result]:
    def complete(inv: Invocation, _: str) -> Result:
        try:
            path = f"{KUEUE_API}/namespaces/{current_namespace(inv)}/workloads"
            items = client(inv).get(path, {"limit": LIMIT}).get("items") or []
        except (ApiError, kubeconfig.ConfigError):
            return [], ERROR
        chosen = [i for i in items if active is None or (i.get("spec") or {}).get("active", True) is active]
        return [n for n in _names(chosen) if n not in inv.args], NO_FILE
    return complete


GLOBAL_COMPLETERS: dict[str, Callable[[Invocation, str], Result]] = {
    "namespace": namespaces, "context": _kubeconfig_names("contexts"),
    "cluster": _kubeconfig_names("clusters"), "user": _kubeconfig_names("users"),
}


# -- the protocol ---------------------------------------------------------------------------------

def _flag_completions(command: Command, changed: set[str], prefix: str) -> list[str]:
    def names(flags: list[Flag]) -> list[str]:
        out: list[str] = []
        for flag in sorted(flags, key=lambda f: f.name):
            if flag.hidden or (flag.name in changed and flag.kind not in ("stringSlice", "stringArray",
                                                                          "boolSlice")):
                continue
            if f"--{flag.name}".startswith(prefix):
                out.append(f"--{flag.name}\t{flag.help}")
            if flag.short and f"-{flag.short}".startswith(prefix):
                out.append(f"-{flag.short}\t{flag.help}")
        return out

    own = [*command.flags, *command.persistent]
    own_names = {f.name for f in own} | {"help"}
    inherited = [f for f in command.all_flags() if f.name not in own_names]
    required = [f for f in own if f.name in command.required and f.name not in changed]
    help_flag = [f for f in command.all_flags() if f.name == "help"]
    return names(required) or names(inherited) + names([*own, *help_flag])


def _flag_needing_value(command: Command, word: str) -> Flag | None:
    flags = command.all_flags()
    if word.startswith("--") and "=" not in word:
        flag = next((f for f in flags if f.name == word[2:]), None)
    elif word.startswith("-") and len(word) == 2:
        flag = next((f for f in flags if f.short == word[1:]), None)
    else:
        return None
    return flag if flag is not None and flag.kind != "bool" else None


def complete(root: Command, words: list[str], make_invocation: Callable[[Command, list[str], dict[str, Any],
                                                                           set[str]], Invocation]) -> Result:
    """Candidates for the last word given the ones before it."""
    *before, current = words or [""]
    value_flag: Flag | None = None
    if current.startswith("-") and "=" in current:
        name, _, current = current.partition("=")
        before = [*before, name]
        value_flag = _flag_needing_value(find(root, before)[0], name)
    elif before:
        value_flag = _flag_needing_value(find(root, before)[0], before[-1])
    command, rest = find(root, before)
    try:
        values, changed, args = parse_flags(command, rest[:-1] if value_flag is not None and rest else rest)
    except Exception:
        return [], DEFAULT
    inv = make_invocation(command, args, values, changed)
    if value_flag is not None:
        completer = command.complete_flags.get(value_flag.name) or GLOBAL_COMPLETERS.get(value_flag.name)
        return completer(inv, current) if completer is not None else ([], DEFAULT)
    if current.startswith("-"):
        return _flag_completions(command, changed, current), NO_FILE
    if command.children and not args:
        visible = sorted((c for c in command.children if not c.hidden), key=lambda c: c.name)
        return [f"{c.name}\t{c.summary}" for c in visible if c.name.startswith(current)], NO_FILE
    if command.complete_args is not None:
        return command.complete_args(inv, current)
    return [], DEFAULT


def write_results(inv: Invocation, result: Result, with_descriptions: bool) -> None:
    candidates, directive = result
    for candidate in candidates:
        if not with_descriptions:
            candidate = candidate.split("\t", 1)[0]
        inv.out.write(candidate.split("\n", 1)[0].strip() + "\n")
    inv.out.write(f":{directive}\n")
    inv.err.write(f"Completion ended with directive: {directive_name(directive)}\n")


# -- scripts ---------------------------------------------------------------------------------

_BASH = r"""# bash completion for kubectl-kueue (and "kubectl kueue" through kubectl_complete-kueue)
_kubectl_kueue() {
    local cur="${COMP_WORDS[COMP_CWORD]}" out directive
    local args=("${COMP_WORDS[@]:1:COMP_CWORD-1}")
    out=$("${COMP_WORDS[0]}" __completeNoDesc "${args[@]}" "$cur" 2>/dev/null) || return
    directive=${out##*:}
    out=${out%:*}
    COMPREPLY=()
    while IFS='' read -r line; do
        [[ -n $line && $line == "$cur"* ]] && COMPREPLY+=("$line")
    done <<< "$out"
    if (( ${#COMPREPLY[@]} == 0 )) && (( (directive & 4) == 0 )) && (( (directive & 1) == 0 )); then
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o default -F _kubectl_kueue kubectl-kueue
"""

_ZSH = r"""#compdef kubectl-kueue
# zsh completion for kubectl-kueue
_kubectl_kueue() {
    local -a lines candidates
    local out directive
    out=$(${words[1]} __complete "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null) || return
    lines=("${(@f)out}")
    directive=${lines[-1]#:}
    candidates=("${(@)lines[1,-2]}")
    candidates=("${(@)candidates//:/\\:}")
    candidates=("${(@)candidates//	/:}")
    if (( ${#candidates} > 0 )); then
        _describe 'kubectl-kueue' candidates
    elif (( (directive & 4) == 0 && (directive & 1) == 0 )); then
        _files
    fi
}
compdef _kubectl_kueue kubectl-kueue
"""

_FISH = r"""# fish completion for kubectl-kueue
function __kubectl_kueue_complete
    set -l args (commandline -opc)
    set -e args[1]
    set -l out (kubectl-kueue __complete $args (commandline -ct) 2>/dev/null)
    for line in $out[1..-2]
        echo $line
    end
end
complete -c kubectl-kueue -f -a '(__kubectl_kueue_complete)'
"""

_POWERSHELL = r"""# powershell completion for kubectl-kueue
Register-ArgumentCompleter -Native -CommandName 'kubectl-kueue' -ScriptBlock {
    param($WordToComplete, $CommandAst, $CursorPosition)
    $words = $CommandAst.CommandElements | Select-Object -Skip 1 | ForEach-Object { $_.ToString() }
    if ($WordToComplete -eq '') { $words += '""' }
    $out = & kubectl-kueue __complete @words 2>$null
    $out | Select-Object -SkipLast 1 | ForEach-Object {
        $name, $description = $_ -split "`t", 2
        if (-not $description) { $description = ' ' }
        [System.Management.Automation.CompletionResult]::new($name, $name, 'ParameterValue', $description)
    }
}
"""

SCRIPTS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH, "powershell": _POWERSHELL}


def script_command(shell: str) -> Command:
    def run(inv: Invocation) -> int:
        inv.out.write(SCRIPTS[shell])
        return 0

    return Command(shell, f"Print the {shell} completion script", nargs=0,
                   flags=(Flag("no-descriptions", "bool", "leave descriptions out of completions"),), run=run)


def command() -> Command:
    group = Command("completion", "Print a shell completion script (bash, zsh, fish or powershell)")
    group.add(*(script_command(shell) for shell in SCRIPTS))
    return group

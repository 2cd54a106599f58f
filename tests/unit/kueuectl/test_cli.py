"""Command lines parsed with kueuectl's rules (cobra commands, pflag flags)."""

from __future__ import annotations

import io

import pytest

from pykueue.kueuectl.cli import ShowHelp, UsageError, check_args, find, parse_flags
from pykueue.kueuectl.main import build, run


def parse(*argv: str) -> tuple[str, dict[str, object], set[str], list[str]]:
    command, rest = find(build(), list(argv))
    values, changed, args = parse_flags(command, rest)
    return command.path(), values, changed, args


def test_flags_go_anywhere_and_aliases_name_commands() -> None:
    path, values, _, args = parse("-n", "ns", "list", "lq", "-A", "--clusterqueue=cq")
    assert (path, values["namespace"], values["all-namespaces"], values["clusterqueue"], args) == (
        "kueuectl list localqueue", "ns", True, "cq", [])
    assert parse("list", "kwl", "-nns", "-q", "lq")[0] == "kueuectl list workload"


def test_short_flags_combine_and_take_glued_values() -> None:
    _, values, _, _ = parse("create", "lq", "x", "-ic", "cq", "-o=yaml")
    assert (values["ignore-unknown-cq"], values["clusterqueue"], values["output"]) == (True, "cq", "yaml")


def test_list_flags_split_on_commas_and_repeat() -> None:
    _, values, changed, _ = parse("create", "cq", "x", "--nominal-quota", "a:cpu=1,b:cpu=2",
                                  "--nominal-quota", "c:cpu=3", "--namespace-selector", "a=b,c=d",
                                  "--namespace-selector", "e=f")
    assert values["nominal-quota"] == ["a:cpu=1", "b:cpu=2", "c:cpu=3"]
    assert values["namespace-selector"] == {"a": "b", "c": "d", "e": "f"}
    assert {"nominal-quota", "namespace-selector"} <= changed


def test_one_pair_is_taken_whole_as_pflag_does() -> None:
    values = parse("create", "cq", "x", "--namespace-selector", "a=b,c")[1]
    assert values["namespace-selector"] == {"a": "b,c"}


def test_string_arrays_keep_commas_and_bool_slices_parse_each_value() -> None:
    _, values, _, _ = parse("list", "workload", "--status", "a,b", "--status", "c")
    assert values["status"] == ["a,b", "c"]
    assert parse("list", "cq", "--active", "true,false")[1]["active"] == [True, False]


@pytest.mark.parametrize(("argv", "message"), [
    (["list", "cq", "--bogus"], "unknown flag: --bogus"),
    (["list", "cq", "-Z"], "unknown shorthand flag: 'Z' in -Z"),
    (["list", "cq", "-o"], "flag needs an argument: 'o' in -o"),
    (["list", "cq", "--output"], "flag needs an argument: --output"),
    (["list", "cq", "--active=x"],
     'invalid argument "x" for "--active" flag: strconv.ParseBool: parsing "x": invalid syntax'),
    (["create", "cq", "x", "--namespace-selector", "a"],
     'invalid argument "a" for "--namespace-selector" flag: a must be formatted as key=value'),
])
def test_flag_errors_read_as_pflags(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=f"^{message}$"):
        parse(*argv)


def test_pass_through_commands_accept_any_flag() -> None:
    path, _, _, args = parse("get", "cq", "name", "-o", "yaml", "--show-labels")
    assert (path, args) == ("kueuectl get clusterqueue", ["name"])


def test_help_flag_and_argument_counts() -> None:
    with pytest.raises(ShowHelp):
        parse("list", "cq", "-h")
    command, rest = find(build(), ["stop", "cq"])
    values, changed, args = parse_flags(command, rest)
    with pytest.raises(UsageError, match=r"^accepts 1 arg\(s\), received 0$"):
        check_args(command, args, values, changed)
    command, rest = find(build(), ["list", "pods"])
    values, changed, args = parse_flags(command, rest)
    with pytest.raises(UsageError, match=r'^required flag\(s\) "for" not set$'):
        check_args(command, args, values, changed)


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_errors_are_one_line_and_exit_one() -> None:
    assert run_cli("list", "cq", "--bogus") == (1, "", "Error: unknown flag: --bogus\n")
    assert run_cli("version", "x") == (1, "", 'Error: unknown command "x" for "kueuectl version"\n')


def test_unknown_commands_get_suggestions() -> None:
    code, _, err = run_cli("lst")
    assert code == 1
    assert err == ('Error: unknown command "lst" for "kueuectl"\n\nDid you mean this?\n\tlist\n\tget\n\n'
                   "Run 'kueuectl --help' for usage.\n")
    assert "\tlist\n" in run_cli("ps")[2]


def test_group_commands_show_help() -> None:
    code, out, _ = run_cli("list", "wl")
    assert code == 0
    assert out.startswith("List Kueue objects") and "Available Commands:" in out


def test_spec_errors_come_before_any_connection() -> None:
    assert run_cli("create", "cq", "x", "--nominal-quota", "alpha:cpu=1.5") == (
        1, "", "Error: invalid resources specification\n")
    assert run_cli("create", "rf", "x", "--node-taints", "k:Sometimes") == (
        1, "", "Error: invalid taint effect: Sometimes, unsupported taint effect\n")


def test_completion_scripts_and_protocol() -> None:
    code, out, _ = run_cli("completion", "bash")
    assert code == 0 and "__completeNoDesc" in out
    code, out, err = run_cli("__completeNoDesc", "stop", "")
    assert (code, out) == (0, "clusterqueue\nlocalqueue\nworkload\n:4\n")
    assert err == "Completion ended with directive: ShellCompDirectiveNoFileComp\n"
    assert run_cli("__completeNoDesc", "create", "lq", "x", "-")[1] == "--clusterqueue\n-c\n:4\n"
    assert run_cli("__completeNoDesc", "list", "cq", "")[1] == ":0\n"

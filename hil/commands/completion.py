"""`hil completion bash`: a bash completion script made from the command's own parser, so it always
knows every verb and option of the installed version."""

from __future__ import annotations

import argparse

SHELLS = ("bash",)


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "completion", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="print a shell completion script (bash)",
        description="Print a completion script for your shell: verbs, their options, packaged missions and "
                    "campaigns, vehicle profiles and scene names complete on Tab.",
        epilog="examples:\n"
               "  hil completion bash > ~/.local/share/bash-completion/completions/hil\n"
               "  eval \"$(hil completion bash)\"     # this shell only")
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(func=run)


def words(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Per verb ("" for the top level): the words that may follow it."""
    from hil.campaign import CAMPAIGNS_DIR
    from missions.scenes import SCENES
    from missions.waypoint import EXAMPLES_DIR
    from profiles.library import list_vehicle_profiles

    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    table = {"": sorted(subparsers.choices) + [o for a in parser._actions for o in a.option_strings]}
    names = {"fly": sorted(p.stem for p in EXAMPLES_DIR.glob("*.yaml")),
             "run": sorted(p.stem for p in CAMPAIGNS_DIR.glob("*.yaml")),
             "profiles": list_vehicle_profiles(), "scene": list(SCENES)}
    for verb, sub in subparsers.choices.items():
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        options = [o for a in sub._actions for o in a.option_strings if o.startswith("--")]
        table[verb] = sorted(set(options + [c for n in nested for c in n.choices] + names.get(verb, [])))
    return table


def script(shell: str, table: dict[str, list[str]]) -> str:
    """The completion script (`shell`: bash): the word lists baked in, looked up by the verb on the line."""
    cases = "\n".join(f"    {verb or '__top'}) _hil_list=\"{' '.join(options)}\" ;;" for verb, options in table.items())
    body = f"""_hil_words() {{
  case "$1" in
{cases}
    *) _hil_list="" ;;
  esac
}}
"""
    return body + """_hil() {
  local verb="${COMP_WORDS[1]}"
  [ "$COMP_CWORD" -le 1 ] && verb="__top"
  _hil_words "$verb"
  COMPREPLY=($(compgen -W "$_hil_list" -- "${COMP_WORDS[COMP_CWORD]}"))
  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
}
complete -o default -F _hil hil
"""


def run(args: argparse.Namespace) -> int:
    from hil.cli import build_parser

    print(script(args.shell, words(build_parser())), end="")
    return 0

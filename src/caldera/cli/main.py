"""`caldera` CLI entry point. User errors print one line and exit 2, never a traceback."""
from __future__ import annotations

import sys

import click

from .. import __version__, gcpolicy
from ..errors import CalderaError

# subcommand -> (module, attribute): imported when the subcommand is used, so `caldera schedule`
# does not pay for importing run's and simulate's dependencies
SUBCOMMANDS = {"schedule": (".schedule", "schedule"), "simulate": (".simulate", "simulate"),
               "run": (".run", "run")}
# The first paragraph of each subcommand's help, which `caldera --help` lists without importing
# them (tests/test_load_overhead.py holds these to the commands' own help).
SHORT_HELP = {
    "run": "Run Caldera as a live scheduler until SIGTERM/SIGINT.",
    "schedule": "Run one scheduling pass and print where each pending pod goes, and why or why not.",
    "simulate": "Replay a workload over time and compare scheduler configurations (pods.csv, summary.json,\n"
                "    timeseries.csv per config; plots and report.html for all).",
}


class CalderaGroup(click.Group):
    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *SUBCOMMANDS})

    def format_commands(self, ctx, formatter):
        """click's listing of the subcommands, from SHORT_HELP for those not imported yet."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            cmd = self.commands.get(name)
            if cmd is None and name in SHORT_HELP:
                rows.append((name, click.utils.make_default_short_help(SHORT_HELP[name], limit)))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx, cmd_name):
        if cmd_name in SUBCOMMANDS and cmd_name not in self.commands:
            import importlib
            module, attr = SUBCOMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module, __package__), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CalderaError as e:
            click.echo(f"caldera: error: {e}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("caldera: interrupted", err=True)
            sys.exit(130)


@click.group(cls=CalderaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="caldera")
def cli():
    """Caldera: kube-scheduler and Volcano semantics, vectorised.

    \b
    caldera schedule   one scheduling pass over manifests (bindings, reasons, --explain)
    caldera simulate   replay a workload in virtual time; compare configurations
    caldera run        a live scheduler in a cluster (leader election, metrics, health)
    """




def _subcommand(argv) -> str | None:
    """The subcommand's name: the first argument that is not an option (the group has only
    --version and --help)."""
    return next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)


def main(argv=None):
    # The collector's policy for this command (short pauses, see caldera/gcpolicy.py): set by the
    # process entry point only, so that tests invoking `cli` in-process keep CPython's defaults.
    gcpolicy.apply(_subcommand(argv))
    try:
        cli.main(args=argv, prog_name="caldera", standalone_mode=True)
    except CalderaError as e:  # errors raised while click parses options
        click.echo(f"caldera: error: {e}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()

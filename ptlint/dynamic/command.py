"""`ptlint explain` (placeholder until the dynamic pass lands)."""

import click


@click.command()
@click.argument("targets", nargs=-1)
def explain(targets) -> None:
    """Run entry points under TorchDynamo and report graph breaks and recompilations."""
    click.echo("ptlint: error: the dynamic pass is not built yet", err=True)
    raise SystemExit(2)

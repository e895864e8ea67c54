"""`vigia-slo`: writes the SLO rule file from the SLO file (docs/slo.md)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import yaml

from vigia.common.logs import setup_logging
from vigia.common.slo.render import render
from vigia.common.slo.rules import rule_groups
from vigia.common.slo.spec import Slo, SpecError, parse

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "prometheus"
SPEC = PROMETHEUS_DIR / "slo" / "slos.yml"
RULES = PROMETHEUS_DIR / "rules" / "slo.yml"
log = logging.getLogger("vigia.slo")


def load(spec: Path) -> list[Slo]:
    """The SLOs of the SLO file at `spec`; OSError, yaml.YAMLError or SpecError if it is not one."""
    return parse(yaml.safe_load_all(spec.read_text(encoding="utf-8")))


def generate(spec: Path) -> str:
    """The rule file's text for the SLO file at `spec`."""
    return render(rule_groups(load(spec)), source_name(spec))


def source_name(spec: Path) -> str:
    """The SLO file as the rule file's header names it: its path in the repository (the same
    on every checkout), else as given."""
    try:
        return spec.resolve().relative_to(PROMETHEUS_DIR.parent).as_posix()
    except ValueError:
        return str(spec)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vigia-slo", description=__doc__)
    parser.add_argument(
        "--spec",
        type=Path,
        default=Path(os.environ.get("VIGIA_SLO_SPEC", SPEC)),
        help="the OpenSLO file (env VIGIA_SLO_SPEC; default: %(default)s)",
    )
    parser.add_argument(
        "--rules",
        type=Path,
        default=Path(os.environ.get("VIGIA_SLO_RULES", RULES)),
        help="the rule file to write (env VIGIA_SLO_RULES; default: %(default)s)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when the rule file is not the generator's output",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging()
    try:
        text = generate(args.spec)
    except (OSError, yaml.YAMLError, SpecError) as error:
        log.error("cannot read SLO file %s: %s", args.spec, error)
        return 2
    if args.check:
        current = args.rules.read_text(encoding="utf-8") if args.rules.exists() else None
        if current != text:
            log.error("%s is not generated from %s: run vigia-slo", args.rules, args.spec)
            return 1
        log.info("%s is up to date with %s", args.rules, args.spec)
        return 0
    args.rules.write_text(text, encoding="utf-8")
    log.info("wrote the rules of %s to %s", args.spec, args.rules)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``pykueue certs generate``: the webhook's CA and serving certificate, offline.

For clusters that do not let pykueue manage its own certificates (or for a local webhook):
writes ``ca.crt``, ``ca.key``, ``tls.crt`` and ``tls.key`` into a directory. Run again on
the same directory and the CA is reused while valid, so caBundles already handed out stay
good; the serving certificate is reissued only when it nears expiry or lacks a name.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pykueue.certs.authority import CA_PREVIOUS_CRT, CertBundle, ensure_bundle


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="certs_command", metavar="ACTION")
    gen = sub.add_parser("generate", help="write ca.crt, ca.key, tls.crt, tls.key into a directory")
    gen.add_argument("--dir", required=True, help="output directory (created if missing)")
    gen.add_argument("--dns", nargs="+", default=[], metavar="NAME", help="DNS names of the serving cert")
    gen.add_argument("--ip", nargs="+", default=[], metavar="IP", help="IP addresses of the serving cert")


def _read(directory: Path) -> CertBundle | None:
    try:
        return CertBundle.from_files({p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()})
    except (OSError, ValueError):
        return None


def main(args: argparse.Namespace) -> int:
    if getattr(args, "certs_command", None) != "generate":
        print("pykueue certs: choose an action: generate", file=sys.stderr)
        return 2
    if not args.dns and not args.ip:
        print("pykueue certs generate: give at least one --dns NAME or --ip IP", file=sys.stderr)
        return 2
    directory = Path(args.dir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        bundle, reason = ensure_bundle(_read(directory), args.dns, args.ip)
    except (OSError, ValueError) as exc:
        print(f"pykueue certs generate: {exc}", file=sys.stderr)
        return 2
    if reason is None:
        print(f"certificates in {directory} are current; nothing written")
        return 0
    stale = directory / CA_PREVIOUS_CRT
    if CA_PREVIOUS_CRT not in bundle.as_files() and stale.exists():
        stale.unlink()  # the CA it kept has expired: nothing signed by it is valid any more
    for name, data in bundle.as_files().items():
        fd = os.open(
            directory / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if name.endswith(".key") else 0o644
        )
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    print(f"wrote ca.crt ca.key tls.crt tls.key to {directory} ({reason})")
    return 0

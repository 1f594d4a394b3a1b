"""Where every experiment's runs live under a results folder, and the run
record's schema version: written by the harness, read back by figures/ and
the tests, from this one place. Standard library only, so figures can be
drawn without the harness's dependencies.

    <results>/ft<k>/<workload>/flows<N>/                      FatTree sweep
    <results>/wifi3g/<sweep>/<scheme>/<x>/                    E4
    <results>/dhft<k>/<sweep>/<scheme>/<x>/                   E7
    <results>/<algorithms|hotspot><k>/<scheme>/ft<k>/one_to_one/flows<N>/   E5, E6
    <results>/linkfailure<k>-<fabric>/<scheme>/               link failure (Fig. 19)
    <results>/oversub<k>/<sweep>/<matrix>/<scheme>/<x>/       E8
    <results>/topologies/<topology>/permutation/flows<N>/     E9
    <results>/filesize/<link>/<scheme>/<size>pkts/            file size (Fig. 17)
    <results>/shortflows<k>/<scheme>/                         short flows (Fig. 12)
    <results>/scheduling<k>[-x<F>]/<scheme>[-<interval>s]/     first fit against MPTCP (Fig. 13)
    <results>/transfers/<nswitch|fattree>/<label>/flows<N>/   distributed transfers
    <results>/manytoone/bcube<n>-<k>/<scheme>/reads/          BCube many-to-one
    <results>/provisioned-<fabric>[-order<paths>]/<scheme>/   provisioned paths (E10)
    <results>/model/                                          the subflow model (Fig. 6)

Each run folder holds run.json; a folder whose name starts with "." is a run
still being written (experiments/staging.py) and is never read back.
"""
from __future__ import annotations

from pathlib import Path

SCHEMA = 1
RECORD = "run.json"


def fattree_run(results: Path, topology: str, workload: str, subflows: int) -> Path:
    return results / topology / workload / f"flows{subflows}"


def wifi3g_run(results: Path, sweep: str, scheme: str, label: str) -> Path:
    return results / "wifi3g" / sweep / scheme / label


def dhft_run(results: Path, k: int, sweep: str, scheme: str, label: str) -> Path:
    return results / f"dhft{k}" / sweep / scheme / label


def cc_compare_scheme(results: Path, experiment: str, k: int, scheme: str) -> Path:
    """The results folder of one scheme of E5/E6: a FatTree sweep's own."""
    return results / f"{experiment}{k}" / scheme


def linkfailure_run(results: Path, k: int, fabric: str, scheme: str) -> Path:
    return results / f"linkfailure{k}-{fabric}" / scheme


def oversub_run(results: Path, k: int, sweep: str, matrix: str, scheme: str, label: str) -> Path:
    return results / f"oversub{k}" / sweep / matrix / scheme / label


def topologies_run(results: Path, topology: str, subflows: int) -> Path:
    return results / "topologies" / topology / "permutation" / f"flows{subflows}"


def provisioned_run(results: Path, fabric: str, variant: str, scheme: str) -> Path:
    return results / (f"provisioned-{fabric}-{variant}" if variant else f"provisioned-{fabric}") / scheme


def filesize_run(results: Path, link: str, scheme: str, size_pkts: int) -> Path:
    return results / "filesize" / link / scheme / f"{size_pkts}pkts"


def shortflows_run(results: Path, k: int, scheme: str) -> Path:
    return results / f"shortflows{k}" / scheme


def transfers_run(results: Path, sweep: str, label: str, subflows: int) -> Path:
    return results / "transfers" / sweep / label / f"flows{subflows}"


def manytoone_run(results: Path, n: int, k: int, scheme: str) -> Path:
    # "reads" keeps the record four folders deep, apart from FATTREE_RECORDS.
    return results / "manytoone" / f"bcube{n}-{k}" / scheme / "reads"


def scheduling_run(results: Path, k: int, label: str, dilation: float = 1.0) -> Path:
    return results / (f"scheduling{k}" + ("" if dilation == 1 else f"-x{dilation:g}")) / label


def model_run(results: Path) -> Path:
    return results / "model"


# Patterns of the records below a results folder, one per layout above.
FATTREE_RECORDS = f"*/*/*/{RECORD}"
WIFI3G_RECORDS = f"wifi3g/*/*/*/{RECORD}"
DHFT_RECORDS = f"dhft*/*/*/*/{RECORD}"
LINKFAILURE_RECORDS = f"linkfailure*/*/{RECORD}"
OVERSUB_RECORDS = f"oversub*/*/*/*/*/{RECORD}"
TOPOLOGIES_RECORDS = f"topologies/*/*/*/{RECORD}"
FILESIZE_RECORDS = f"filesize/*/*/*/{RECORD}"
SHORTFLOWS_RECORDS = f"shortflows*/*/{RECORD}"
SCHEDULING_RECORDS = f"scheduling*/*/{RECORD}"
TRANSFERS_RECORDS = f"transfers/*/*/*/{RECORD}"
MANYTOONE_RECORDS = f"manytoone/*/*/reads/{RECORD}"
PROVISIONED_RECORDS = f"provisioned-*/*/{RECORD}"
CC_COMPARE_RECORDS = f"*/*/ft*/one_to_one/flows*/{RECORD}"


def committed(results: Path, pattern: str) -> list[Path]:
    """The records matching `pattern`, sorted, without any still being
    written (a hidden folder on the way)."""
    return [p for p in sorted(results.glob(pattern))
            if not any(part.startswith(".") for part in p.relative_to(results).parts)]

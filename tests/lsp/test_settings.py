"""Settings: initializationOptions, didChangeConfiguration (push and pull), bad values, rule files.

Each test starts a server of its own (settings are per server), once per client profile.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from lsprotocol import types

from .conftest import CLIENTS, FIXTURES, fixture_text, fresh_uri, open_log, started, wait_published

SEV = types.DiagnosticSeverity


def severities(diagnostics) -> set[tuple[int, SEV]]:
    return {(d.range.start.line, d.severity) for d in diagnostics}


def change_configuration(client, settings) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def messages_matching(client, needle: str, timeout: float = 5.0) -> list[str]:
    for _ in range(int(timeout / 0.05)):
        found = [m.message for m in client.messages if needle in m.message]
        if found:
            return found
        await asyncio.sleep(0.05)
    return []


@pytest.mark.parametrize("profile", CLIENTS)
async def test_initialization_options_and_bad_rule_files(profile):
    options = {
        "vllmLog": {
            "diagnostics": {
                "precursors": False,
                "severityOverrides": {"symptom": "hint", "kv-cache-no-memory": "warning"},
            },
            "rules": {"extraFiles": [str(FIXTURES / "rules-good.toml"), str(FIXTURES / "rules-bad.toml")]},
        }
    }
    async with started(profile, options) as client:
        # The bad rule file is named with its line; the good one is used.
        [message] = await messages_matching(client, "rules-bad.toml")
        assert "rules-bad.toml:2" in message
        diagnostics = await open_log(client, fresh_uri("032.log"), fixture_text("crash-032.log"))
        assert (159, SEV.Warning) in severities(diagnostics)  # rule override
        assert SEV.Information not in {d.severity for d in diagnostics}  # no precursors
        assert {d.severity for d in diagnostics if d.range.start.line != 159} == {SEV.Hint}
        diagnostics = await open_log(client, fresh_uri("031.log"), fixture_text("crash-031.log"))
        assert [d.code for d in diagnostics if d.range.start.line == 24] == ["user-sigbus"]


@pytest.mark.parametrize("profile", CLIENTS)
async def test_did_change_configuration_and_bad_values(profile):
    async with started(profile) as client:
        uri = fresh_uri("032.log")
        diagnostics = await open_log(client, uri, fixture_text("crash-032.log"))
        assert (135, SEV.Information) in severities(diagnostics)

        # VS Code style push, with a size limit the log exceeds.
        change_configuration(client, {"vllmLog": {"maxFileSizeMB": 0.01}})
        diagnostics = await wait_published(client, uri, count=2)
        assert len(diagnostics) == 1 and diagnostics[0].severity == SEV.Information
        assert "maxFileSizeMB" in diagnostics[0].message

        # Bad values: each key is named, and falls back to its default.
        change_configuration(client, {"maxFileSizeMB": "big", "diagnostics": {"precursors": "yes"}})
        assert await messages_matching(client, "vllmLog.maxFileSizeMB")
        assert await messages_matching(client, "vllmLog.diagnostics.precursors")
        assert all(m.type == types.MessageType.Error for m in client.messages)
        diagnostics = await wait_published(client, uri, count=3)
        assert (135, SEV.Information) in severities(diagnostics) and (159, SEV.Error) in severities(
            diagnostics
        )


@pytest.mark.parametrize("profile", CLIENTS)
async def test_pull_configuration_per_folder(profile):
    folder = "file:///work/project"
    async with started(profile, folders=[folder]) as client:
        uri = f"{folder}/logs/032.log"
        await open_log(client, uri, fixture_text("crash-032.log"))
        # An empty didChangeConfiguration makes the server pull `vllmLog` (global and per folder).
        client.set_configuration({"diagnostics": {"precursors": True}}, section="vllmLog")
        client.set_configuration(
            {"diagnostics": {"severityOverrides": {"precursor": "hint"}}}, section="vllmLog", scope_uri=folder
        )
        change_configuration(client, None)
        diagnostics = await wait_published(client, uri, count=2)
        assert (135, SEV.Hint) in severities(diagnostics)


@pytest.mark.parametrize("profile", CLIENTS)
async def test_numbers_out_of_range_are_refused_naming_the_key(profile):
    """`maxFileSizeMB: 1e308` used to be taken, and every analysis then failed with OverflowError."""
    options = {"vllmLog": {"maxFileSizeMB": 1e308, "debounceMs": 1e12}}
    async with started(profile, options) as client:
        assert await messages_matching(client, "vllmLog.maxFileSizeMB")
        assert await messages_matching(client, "vllmLog.debounceMs")
        diagnostics = await open_log(client, fresh_uri("032.log"), fixture_text("crash-032.log"))
        assert (159, SEV.Error) in severities(diagnostics)  # analysed with the default limit


@pytest.mark.parametrize("profile", CLIENTS)
async def test_rule_files_apply_to_their_own_folder_only(profile):
    """Folder A's `rules.extraFiles` diagnose A's logs; folder B's logs keep the built-in catalog."""
    folder_a, folder_b = "file:///work/a", "file:///work/b"
    options = [
        {"workspace": folder_a, "rules": {"extraFiles": [str(FIXTURES / "rules-good.toml")]}},
        {"workspace": folder_b, "diagnostics": {"precursors": True}},
    ]
    async with started(profile, options, folders=[folder_a, folder_b]) as client:
        in_a = await open_log(client, f"{folder_a}/logs/031.log", fixture_text("crash-031.log"))
        in_b = await open_log(client, f"{folder_b}/logs/031.log", fixture_text("crash-031.log"))
        assert [d.code for d in in_a if d.range.start.line == 24] == ["user-sigbus"]
        assert [d.code for d in in_b if d.range.start.line == 24] not in ([], ["user-sigbus"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("profile", CLIENTS[:1])
async def test_rule_files_that_are_fifos_or_devices_never_block_the_server(profile, tmp_path):
    os.mkfifo(tmp_path / "rules.toml")
    (tmp_path / "zero.toml").symlink_to("/dev/zero")
    files = [str(tmp_path / "rules.toml"), str(tmp_path / "zero.toml"), "/dev/stdin"]

    async def session() -> None:
        async with started(profile, {"rules": {"extraFiles": files}}) as client:
            diagnostics = await open_log(client, fresh_uri("032.log"), fixture_text("crash-032.log"))
            assert (159, SEV.Error) in severities(diagnostics)
            for name in ("rules.toml", "zero.toml", "/dev/stdin"):
                assert await messages_matching(client, name), name

    await asyncio.wait_for(session(), 60)

"""Hover: the diagnosis on a root-cause line; the way to it on symptom and precursor lines.

Any position on such a line hovers (a log line is one statement); the hover's range is the
exception text, symptom or precursor span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..core.health import health_catalog
from .health_render import health_markdown, prefailure_markdown, stats_markdown
from .render import finding_markdown, precursor_markdown, symptom_markdown
from .safety import guarded

if TYPE_CHECKING:
    from .server import VllmLogServer


def register(server: VllmLogServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded(server)
    async def hover(params: types.HoverParams) -> types.Hover | None:
        result = server.documents.result(params.text_document.uri)
        # (The client's lines: a transcript, a JSON log's or a cut copy's joined lines, has
        # more or fewer.)
        if result is None or not 0 <= params.position.line <= result.lines.last_line()[0]:
            return None
        encoding = server.position_encoding
        line = result.lines.core_line(params.position, encoding)
        sections: list[str] = []
        span = None
        health = result.analysis.health
        for finding in result.finding_at_root(line):
            previews = await server.launch_index.previews(params.text_document.uri, finding)
            sections.append(finding_markdown(finding, previews, result.lines.line))
            record = health.record_for(finding.line) if health else None
            sections += [prefailure_markdown(record, result.lines.line)] if record else []
            span = span or finding.root
        for finding in result.findings_with_symptom(line):
            symptom = next(s for s in finding.symptoms if s.line == line)
            if finding.root.line != line:
                sections.append(symptom_markdown(symptom, finding, result.lines.line(finding.root.line)))
                span = span or symptom.span
        for pre in result.analysis.precursors:
            if pre.line == line:
                sections.append(precursor_markdown(pre))
                span = span or pre.span
        if health is not None:
            for item in health.findings:
                if item.line == line:
                    sections.append(health_markdown(item, result.lines.line))
                    span = span or item.span
            if (found := health.sample_at(line)) is not None:
                series, position = found
                radius = health_catalog().sparkline_radius
                sections.append(stats_markdown(series, position, radius, result.lines.line))
                span = span or series.samples[position].span
        if not sections:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(sections)),
            range=result.lines.range(span, encoding) if span else None,
        )

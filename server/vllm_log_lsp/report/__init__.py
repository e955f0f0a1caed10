"""Renderings of an analysis outside the editor: health text and JSON for `check`, the HTML report."""

// Renders an HTML report (`vllm-log-lsp check --report`) in headless Chromium, as a reader would open
// the file, and records what the page shows: console messages, page errors, failed requests, the
// charts' data, and a screenshot. tests/editors/test_html_report.py makes the assertions.
// Usage: node report.mjs CHROMIUM REPORT.html SCREENSHOT.png   (prints JSON on stdout)

import { launchChromium } from './browser.mjs';

const [executablePath, report, screenshot] = process.argv.slice(2);
const browser = await launchChromium(executablePath);
const result = { console: [], pageErrors: [], requests: [] };
try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, deviceScaleFactor: 1 });
    page.on('console', (m) => result.console.push({ type: m.type(), text: m.text() }));
    page.on('pageerror', (e) => result.pageErrors.push(String(e)));
    page.on('request', (r) => result.requests.push(r.url()));
    await page.goto(`file://${report}`, { waitUntil: 'load' });
    result.page = await page.evaluate(() => {
        const box = (el) => {
            const r = el.getBoundingClientRect();
            return { width: r.width, height: r.height };
        };
        return {
            title: document.title,
            verdict: document.querySelector('.verdict')?.textContent ?? '',
            timeline: document.querySelector('svg.timeline') ? box(document.querySelector('svg.timeline')) : null,
            phases: document.querySelectorAll('svg.timeline rect.phase').length,
            deathsOnTimeline: document.querySelectorAll('svg.timeline path.death').length,
            charts: Array.from(document.querySelectorAll('figure.chart')).map((f) => ({
                caption: f.querySelector('figcaption')?.textContent ?? '',
                size: box(f.querySelector('svg')),
                series: Array.from(f.querySelectorAll('polyline.series')).map((p) => ({
                    name: p.dataset.series,
                    points: p.points.length,
                    length: p.getTotalLength(),
                })),
                deathMarkers: f.querySelectorAll('line.death').length,
            })),
            excerpt: document.querySelector('pre.excerpt .root')?.textContent ?? '',
            fixes: Array.from(document.querySelectorAll('.incident ol.fixes li code')).map((c) => c.textContent),
            scripts: document.scripts.length,
        };
    });
    await page.screenshot({ path: screenshot, fullPage: true });
} finally {
    await browser.close();
}
process.stdout.write(JSON.stringify(result));

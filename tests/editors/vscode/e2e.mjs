// Drives a running code-server (real VS Code 1.100 in the browser) with playwright-core + Debian's chromium,
// the way a user would: open the crash log, read the language mode, the Problems panel, the hover on the
// root-cause line, go to definition from the EngineDeadError line, apply a quick fix, and open the HTML
// report of a log with stats lines (vLLM Log: Show Report).
//
// It only observes and records; tests/editors/test_vscode.py makes the assertions.
// Usage: node e2e.mjs CONFIG.json   (see test_vscode.py for the fields); writes CONFIG.result to stdout as JSON.

import { readFileSync, writeFileSync } from 'node:fs';
import { launchChromium } from './browser.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const result = { steps: [], errors: [] };
const t0 = Date.now();
const log = (msg) => {
    result.steps.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`);
    process.stderr.write(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn until it returns a truthy value or the time is up; returns the last value. */
async function poll(fn, timeoutMs, intervalMs = 200) {
    const end = Date.now() + timeoutMs;
    let v;
    for (;;) {
        try {
            v = await fn();
        } catch {
            v = undefined;
        }
        if (v || Date.now() > end) {
            return v;
        }
        await sleep(intervalMs);
    }
}

const browser = await launchChromium(cfg.chromium);
const page = await browser.newPage({ viewport: { width: 1600, height: 1000 }, deviceScaleFactor: 1 });
page.setDefaultTimeout(15000);

async function statusText(id) {
    // Status bar items have ids like "status.editor.mode".
    return (await page.locator(`[id="${id}"]`).first().innerText()).trim();
}

async function command(name) {
    // Run a command through the Command Palette (F1), as a user would.
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${name}`);
    // The list filters after the text is in: on a loaded machine its first row can still be a stale
    // one (a recently used command) for a while, and Enter would run that. Wait for the row asked for.
    const first = page.locator('.quick-input-list .monaco-list-row').first();
    await first.waitFor({ state: 'visible' });
    const wanted = name.toLowerCase();
    const ready = await poll(async () => (await first.innerText()).toLowerCase().includes(wanted), 15000);
    if (!ready) {
        throw new Error(`the Command Palette did not offer "${name}" first: "${await first.innerText()}"`);
    }
    await sleep(150);
    await page.keyboard.press('Enter');
    await sleep(200);
}

async function openFile(name) {
    await page.keyboard.press('Escape');
    const tab = page.locator(`.tabs-container .tab[aria-label^="${name}"]`).first();
    if ((await tab.count()) > 0) {
        await tab.click();
    } else {
        await page.keyboard.press('Control+P');
        const input = page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible' });
        await input.fill(name);
        await page
            .locator('.quick-input-list .monaco-list-row', { hasText: name })
            .first()
            .waitFor({ state: 'visible' });
        await sleep(300);
        await page.keyboard.press('Enter');
    }
    await page.locator(`.tab.active[aria-label*="${name}"], .tab.active:has-text("${name}")`).first().waitFor();
    await page.locator('.monaco-editor .view-lines').first().waitFor();
    await sleep(300);
    await page.locator('.editor-group-container.active .monaco-editor textarea').first().focus();
}

async function goTo(line, column) {
    // Go to Line/Column (Ctrl+G) accepts "line:column".
    await page.locator('.editor-group-container.active .monaco-editor textarea').first().focus();
    await page.keyboard.press('Control+G');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`:${line}:${column}`);
    await sleep(100);
    await page.keyboard.press('Enter');
    await poll(async () => (await statusText('status.editor.selection')).includes(`Ln ${line},`), 3000);
}

async function cursorLine() {
    const s = await statusText('status.editor.selection'); // "Ln 29, Col 80"
    const m = /Ln (\d+), Col (\d+)/.exec(s);
    return m ? { line: Number(m[1]), column: Number(m[2]), text: s } : { text: s };
}

async function markers() {
    return page.$$eval('.markers-panel .monaco-list-row', (rows) =>
        rows.map((r) => ({
            level: Number(r.getAttribute('aria-level') || '0'),
            label: r.getAttribute('aria-label') || '',
            text: r.innerText.replace(/\s+/g, ' ').trim(),
        })),
    );
}

let serverSilent = false; // no diagnostics at all: the steps that need the server are not tried

async function step(name, fn, { needsServer = true, optIn = false } = {}) {
    // A shorter scenario (the untrusted workspace) names its steps; an opt-in step runs only when named.
    if (cfg.onlySteps ? !cfg.onlySteps.includes(name) : optIn) {
        return;
    }
    if (needsServer && serverSilent) {
        result.errors.push(`${name}: not tried, the server published no diagnostics`);
        return;
    }
    try {
        log(`${name}…`);
        await fn();
    } catch (e) {
        result.errors.push(`${name}: ${String(e && e.message ? e.message.split('\n')[0] : e)}`);
        log(`${name} FAILED: ${String(e)}`);
        try {
            await page.screenshot({ path: `${cfg.artifacts}/vscode-failure-${name.replace(/\W+/g, '-')}.png` });
        } catch {
            // ignore
        }
    }
}

try {
    await step('load workbench', async () => {
        await page.goto(cfg.url, { waitUntil: 'domcontentloaded', timeout: 30000 });
        await page.locator('.monaco-workbench').waitFor({ timeout: 30000 });
        await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 20000 }).catch(() => {});
        await sleep(500);
    }, { needsServer: false });

    await step('restricted mode', async () => {
        // VS Code shows "Restricted Mode" at the left of the status bar while the workspace is untrusted.
        result.restrictedMode = await poll(async () => {
            const text = await page.locator('.statusbar').first().innerText();
            return /Restricted Mode/i.test(text) ? 'Restricted Mode' : undefined;
        }, 10000);
    }, { needsServer: false, optIn: true });

    await step('open crash log', async () => {
        await openFile(cfg.log.name);
        result.languageMode = await poll(async () => {
            const m = await statusText('status.editor.mode');
            return m && m !== 'Plain Text' ? m : undefined;
        }, 5000).catch(() => undefined);
        result.languageMode = result.languageMode || (await statusText('status.editor.mode'));
    }, { needsServer: false });

    await step('problems panel', async () => {
        await page.keyboard.press('Control+Shift+M');
        await page.locator('.markers-panel').first().waitFor();
        // Diagnostics arrive once the extension has started the server and it has analysed the log.
        result.markers = await poll(async () => {
            const rows = await markers();
            return rows.some((r) => r.level >= 2) ? rows : undefined;
        }, cfg.diagnosticsTimeoutMs);
        result.markers = result.markers || (await markers());
        serverSilent = !result.markers.some((r) => r.level >= 2);
    }, { needsServer: false });

    await step('hover on root cause', async () => {
        await goTo(cfg.log.rootCauseLine, cfg.log.rootCauseColumn);
        // Only a hover on screen: VS Code keeps closed hover widgets in the DOM, and reading one of those
        // (innerText of a hidden element runs its paragraphs together) gave a stale or garbled text.
        const hover = page
            .locator('.monaco-hover:not(.hidden) .monaco-hover-content, .monaco-resizable-hover .monaco-hover-content')
            .filter({ visible: true })
            .first();
        // A hover the mouse opened earlier (before the analysis was published) may still be up at this
        // place; Show Hover would only re-show it. Close it and ask again, as a user would.
        let last = '';
        for (let attempt = 0; attempt < 3 && !/Root cause/.test(last); attempt++) {
            await page.keyboard.press('Escape');
            await page.mouse.move(5, 5);
            await sleep(300);
            await page.keyboard.press('Control+K');
            await page.keyboard.press('Control+I');
            // The hover fills in as its providers answer (markers at once; the server's part, code actions
            // "Checking for quick fixes..."): wait until it has stopped changing for a second.
            let stableSince = Date.now();
            result.hover = await poll(async () => {
                const txt = (await hover.innerText()).trim();
                if (txt !== last) {
                    last = txt;
                    stableSince = Date.now();
                }
                const busy = /Loading\.\.\.|Checking for quick fixes/.test(txt);
                return txt && !busy && Date.now() - stableSince >= 1000 ? txt : undefined;
            }, 15000, 100);
        }
        result.hover = result.hover || last;
        await page.screenshot({ path: `${cfg.artifacts}/vscode-hover.png` });
        await page.keyboard.press('Escape');
    });

    await step('go to definition from the symptom', async () => {
        await goTo(cfg.log.symptomLine, cfg.log.symptomColumn);
        result.symptomCursor = await cursorLine();
        await page.keyboard.press('F12');
        result.definition = await poll(async () => {
            const c = await cursorLine();
            return c.line !== cfg.log.symptomLine ? c : undefined;
        }, 8000);
        result.definition = result.definition || (await cursorLine());
    });

    await step('go to root cause command', async () => {
        await goTo(cfg.log.symptomLine, cfg.log.symptomColumn);
        await command('vLLM Log: Go to Root Cause');
        result.goToRootCause = await poll(async () => {
            const c = await cursorLine();
            return c.line !== cfg.log.symptomLine ? c : undefined;
        }, 8000);
        result.goToRootCause = result.goToRootCause || (await cursorLine());
    });

    await step('code lens', async () => {
        // The server's code lens above a symptom line ("Root cause: ... (line N)") runs
        // vllmLog.goToRootCause [uri, line]: the client forwards it, the server answers with showDocument.
        await goTo(cfg.log.symptomLine + 1, 1);
        const lens = page.locator('.contentWidgets .codelens-decoration a', { hasText: 'Root cause' });
        const shown = await poll(async () => (await lens.count()) > 0, 5000);
        result.codeLenses = shown ? (await lens.allInnerTexts()).map((s) => s.trim()).filter(Boolean) : [];
        if (!shown) {
            return;
        }
        await goTo(cfg.log.symptomLine, 1);
        const before = await cursorLine();
        // Click the lowest visible one (the symptom line's lens is just above the centred cursor line).
        const target = page.locator('.contentWidgets .codelens-decoration a:visible', { hasText: 'Root cause' }).last();
        await target.click();
        result.codeLensCursor = await poll(async () => {
            const c = await cursorLine();
            return c.line !== before.line ? c : undefined;
        }, 5000);
        result.codeLensCursor = result.codeLensCursor || (await cursorLine());
    });

    // The Quick Fix menu (Ctrl+.) at the cursor: its rows, one per action; closed again.
    async function quickFixMenu() {
        await page.keyboard.press('Control+.');
        // The menu: group headers, then one row per action (the first one has the focus).
        const menu = page.locator('.action-widget .monaco-list-row.action');
        const appeared = await poll(async () => (await menu.count()) > 0, 5000);
        const rows = appeared
            ? (await menu.allInnerTexts()).map((s) => s.replace(/\s+/g, ' ').trim()).filter(Boolean)
            : [];
        await page.keyboard.press('Escape');
        await poll(async () => (await page.locator('.action-widget').count()) === 0 ||
            !(await page.locator('.action-widget').first().isVisible()), 3000);
        return rows;
    }

    await step('quick fix without a matching script', async () => {
        // A log of another model than any launch script serves: a short menu, the fixed command first
        // (before 'quick fix' edits serve.sh, so that its fix is still there to offer as plausible).
        if (!cfg.noMatchLog) {
            return;
        }
        await openFile(cfg.noMatchLog.name);
        result.noMatchMarkers = await poll(async () => {
            const rows = await markers();
            return rows.some((r) => r.level >= 2 && (r.label + r.text).includes(`${cfg.noMatchLog.rootCauseLine}`))
                ? rows
                : undefined;
        }, cfg.diagnosticsTimeoutMs);
        await goTo(cfg.noMatchLog.rootCauseLine, cfg.noMatchLog.rootCauseColumn);
        result.noMatchQuickFixes = await quickFixMenu();
        await openFile(cfg.log.name);
    });

    await step('quick fix', async () => {
        await goTo(cfg.log.rootCauseLine, cfg.log.rootCauseColumn);
        result.quickFixes = await quickFixMenu();
        const wanted = cfg.quickFixPattern ? new RegExp(cfg.quickFixPattern, 'i') : undefined;
        if (!result.quickFixes.some((s) => (wanted ? wanted.test(s) : true))) {
            return;
        }
        // "Auto Fix..." applies the preferred quick fix when there is exactly one (else it shows a menu).
        const before = await statusText('status.editor.selection');
        const original = readFileSync(cfg.script, 'utf8');
        const menu = page.locator('.action-widget .monaco-list-row.action');
        // Wait for what Auto Fix did, not for a fixed time: a menu (more than one preferred fix), or the
        // edit, in an editor with unsaved changes or already saved (files.refactoring.autoSave).
        // On a loaded machine the code actions at the cursor may not be computed yet when Auto Fix asks
        // for them (it then says there are none and does nothing): asked again, a few times.
        let outcome;
        for (result.autoFixAttempts = 1; ; result.autoFixAttempts++) {
            await goTo(cfg.log.rootCauseLine, cfg.log.rootCauseColumn);
            await command('Auto Fix...');
            outcome = await poll(async () => {
                if ((await menu.count()) > 0) {
                    return 'menu';
                }
                if (readFileSync(cfg.script, 'utf8') !== original) {
                    return 'saved';
                }
                return (await page.locator('.tab.dirty').count()) > 0 ? 'unsaved' : undefined;
            }, 15000);
            if (outcome || result.autoFixAttempts >= 3) {
                break;
            }
        }
        result.autoFixOutcome = outcome || 'nothing';
        result.autoFixMenu = await menu.count();
        if (result.autoFixMenu > 0) {
            await page.keyboard.press('Escape');
            return;
        }
        result.quickFixApplied = result.quickFixes[0];
        result.autoFixSelection = before;
        // Save All makes sure the edit reaches the disk; wait until it has.
        await command('File: Save All Files');
        await poll(async () => readFileSync(cfg.script, 'utf8') !== original, 30000);
    });

    await step('log-language file', async () => {
        if (!cfg.plainLog) {
            return;
        }
        await openFile(cfg.plainLog.name);
        // VS Code opens a *.log as Log (the file name wins); the extension sees vLLM's lines and sets vLLM Log.
        result.plainLogLanguageMode = await poll(async () => {
            const m = (await statusText('status.editor.mode')).trim();
            return m === 'vLLM Log' ? m : undefined;
        }, 8000);
        result.plainLogLanguageMode = result.plainLogLanguageMode || (await statusText('status.editor.mode')).trim();
        result.plainLogStatus = await poll(async () => {
            const texts = await page.locator('.statusbar-item', { hasText: 'vLLM log' }).allInnerTexts();
            return texts.map((t) => t.trim()).find((t) => /root cause/.test(t));
        }, cfg.diagnosticsTimeoutMs);
        result.plainLogMarkers = await poll(async () => {
            // The Problems tree: a file row (level 1) followed by that file's diagnostics (level 2).
            const rows = await markers();
            const i = rows.findIndex((r) => r.level === 1 && (r.label + r.text).includes(cfg.plainLog.name));
            return i >= 0 && rows[i + 1] && rows[i + 1].level >= 2 ? rows : undefined;
        }, cfg.diagnosticsTimeoutMs);
        result.plainLogMarkers = result.plainLogMarkers || (await markers());
    });

    await step('other log stays a log', async () => {
        if (!cfg.otherLog) {
            return;
        }
        await openFile(cfg.otherLog.name);
        await sleep(2000); // long enough for a switch to have happened, were there one
        result.otherLogLanguageMode = (await statusText('status.editor.mode')).trim();
        result.otherLogStatus = (await page.locator('.statusbar-item', { hasText: 'vLLM log' }).allInnerTexts()).length;
    }, { needsServer: false });

    await step('theme screenshots', async () => {
        // The crash log around its root cause in the default dark and light themes (docs/).
        await openFile(cfg.log.name);
        await page.keyboard.press('Control+J'); // no panel: more log on screen
        await goTo(cfg.log.rootCauseLine, 1);
        await page.mouse.move(5, 5);
        for (const theme of cfg.themes || []) {
            // The theme picker (Ctrl+K Ctrl+T), as a user would pick the theme.
            await page.locator('.editor-group-container.active .monaco-editor textarea').first().focus();
            await page.keyboard.press('Control+K');
            await page.keyboard.press('Control+T');
            const input = page.locator('.quick-input-widget input');
            await input.waitFor({ state: 'visible' });
            await input.fill(theme.name);
            await page.locator('.quick-input-list .monaco-list-row', { hasText: theme.name }).first().waitFor();
            await sleep(300);
            await page.keyboard.press('Enter');
            await poll(async () => {
                const dark = await page.locator('.monaco-workbench.vs-dark').count();
                return /dark/i.test(theme.name) === dark > 0;
            }, 10000);
            await page.mouse.move(5, 5);
            await sleep(1500);
            await page.screenshot({ path: theme.path });
            (result.themeScreenshots = result.themeScreenshots || []).push(theme.path);
        }
    }, { optIn: true });

    await step('screenshot', async () => {
        // The picture for the README: the crash log with the Problems panel and the hover on the root cause.
        await openFile(cfg.log.name);
        await page.mouse.move(5, 5); // no tooltip over the tab
        // Outside the diagnostic's range (the line's prefix) the hover is the server's explanation alone.
        await goTo(cfg.log.rootCauseLine, 20);
        // Scroll the root-cause line (centred by Go to Line) near the top, so the hover opens below it.
        const box = await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().boundingBox();
        if (box) {
            await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
            await page.mouse.wheel(0, Math.max(0, box.height / 2 - 80));
            await sleep(300);
            await page.mouse.move(5, 5);
        }
        await page.keyboard.press('Control+K');
        await page.keyboard.press('Control+I');
        await sleep(1500);
        await page.screenshot({ path: `${cfg.artifacts}/vscode-e2e.png` });
        // And one with the panel closed, where the hover has room for the whole explanation.
        await page.keyboard.press('Escape');
        await page.keyboard.press('Control+J');
        await sleep(400);
        await goTo(cfg.log.rootCauseLine, 20);
        const box2 = await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().boundingBox();
        if (box2) {
            await page.mouse.move(box2.x + box2.width / 2, box2.y + box2.height / 2);
            await page.mouse.wheel(0, Math.max(0, box2.height / 2 - 80));
            await sleep(300);
            await page.mouse.move(5, 5);
        }
        await page.keyboard.press('Control+K');
        await page.keyboard.press('Control+I');
        await sleep(1500);
        await page.screenshot({ path: `${cfg.artifacts}/vscode-hover-large.png` });
    });

    await step('analyze file from disk', async () => {
        // For logs VS Code will not sync (> 50 MB): pick a file in the (simple, in-browser) file dialog;
        // the client runs the server's vllmLog.analyzeFile and shows the summary.
        await command('vLLM Log: Analyze Log File from Disk');
        const input = page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible' });
        await input.fill(cfg.diskLog.path);
        await sleep(300);
        await page.keyboard.press('Enter');
        const toast = page.locator('.notifications-toasts .notification-toast', { hasText: cfg.diskLog.name });
        result.analyzeFileToast = await poll(async () => {
            if (await input.isVisible()) {
                await page.keyboard.press('Enter'); // the dialog may want a second Enter to confirm
            }
            const texts = await toast.allInnerTexts();
            return texts.find((t) => /line \d+/.test(t));
        }, 15000, 500);
        result.analyzeFileToast = (result.analyzeFileToast || '').replace(/\s+/g, ' ').trim();
        // Its diagnostics are published for the file's URI: the Problems panel lists it, unopened. (The
        // panel's list is virtual, so filter it down to that file first.)
        if (!(await page.locator('.markers-panel').first().isVisible())) {
            await page.keyboard.press('Control+Shift+M');
        }
        const filter = page.locator('.panel .viewpane-filter input, .panel .markers-panel-action-filter input').first();
        await filter.fill(`**/${cfg.diskLog.name}`);
        result.analyzeFileMarkers = await poll(async () => {
            const rows = await markers();
            return rows.some((r) => r.level === 1 && (r.label + r.text).includes(cfg.diskLog.name)) ? rows : undefined;
        }, 5000);
        await filter.fill('');
        const close = page.locator('.notifications-toasts .codicon-notifications-clear, .notifications-toasts .codicon-close');
        for (const c of await close.all()) {
            await c.click().catch(() => {});
        }
    });

    await step('show report', async () => {
        // `vLLM Log: Show Report` on a log with stats lines: the same HTML report as `check --report`,
        // in a webview beside the log.
        await openFile(cfg.reportLog.name);
        await command('vLLM Log: Show Report');
        // A webview is an iframe (webview host) around another iframe (the page): find the page's frame.
        const frame = await poll(async () => {
            for (const f of page.frames()) {
                const title = await f.evaluate(() => document.title).catch(() => '');
                if (title.startsWith('vLLM log report')) {
                    return f;
                }
            }
            return undefined;
        }, 20000, 300);
        if (!frame) {
            result.report = { found: false };
            return;
        }
        result.report = await frame.evaluate(() => ({
            found: true,
            title: document.title,
            verdict: (document.querySelector('.verdict') || {}).textContent || '',
            charts: document.querySelectorAll('figure.chart').length,
            polylines: Array.from(document.querySelectorAll('polyline.series')).map((p) => Number(p.dataset.points)),
            deathMarkers: document.querySelectorAll('line.death').length,
        }));
        // The report opens beside the log (which keeps the focus): every editor group's tabs.
        result.reportTabs = (await page.locator('.tabs-container .tab').allInnerTexts()).map((t) => t.trim());
        await sleep(500);
        await page.screenshot({ path: `${cfg.artifacts}/vscode-report.png` });
    });

    await step('missing python', async () => {
        // Point vllmLog.interpreter at nothing, as a user would: edit and save the settings.json of the
        // machine the server runs on ("Remote Settings": the setting is machine-overridable, so in a remote
        // window like code-server's the browser's user settings do not apply to it). The extension restarts
        // the server and must say what is wrong and what to do.
        await command('Preferences: Open Remote Settings (JSON)');
        await page.locator('.tab.active', { hasText: 'settings.json' }).first().waitFor();
        await page.locator('.editor-group-container.active .monaco-editor textarea').first().focus();
        await page.keyboard.press('Control+A');
        await page.keyboard.insertText('{"vllmLog.interpreter": ["/nonexistent/python3"]}');
        await page.keyboard.press('Control+S');
        const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'vLLM Log' });
        result.missingPythonToast = await poll(async () => {
            const texts = await toast.allInnerTexts();
            return texts.find((t) => /Python/.test(t));
        }, 10000);
        if (result.missingPythonToast) {
            result.missingPythonToast = result.missingPythonToast.replace(/\s+/g, ' ').trim();
            await page.screenshot({ path: `${cfg.artifacts}/vscode-missing-python.png` });
        }
    }, { needsServer: false });
} finally {
    result.seconds = (Date.now() - t0) / 1000;
    writeFileSync(cfg.result, JSON.stringify(result, null, 2));
    await browser.close();
}

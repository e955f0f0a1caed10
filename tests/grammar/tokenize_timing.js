// Tokenize a file line by line with the same engine VS Code uses (vscode-textmate + oniguruma, from
// grammars/node_modules) and print {"lines": N, "ms": [per-line milliseconds]} as JSON.
// usage: node tests/grammar/tokenize_timing.js SCOPE FILE [CONFIG]
//   CONFIG: a package.json-like file whose contributes.grammars lists the grammars
//   (default grammars/test-support/contributes.json).
'use strict';
const fs = require('fs');
const path = require('path');
const grammars = path.join(__dirname, '..', '..', 'grammars');
const nm = path.join(grammars, 'node_modules');
const tm = require(path.join(nm, 'vscode-textmate'));
const onig = require(path.join(nm, 'vscode-oniguruma'));

const [scope, file, configArg] = process.argv.slice(2);
const configPath = configArg || path.join(grammars, 'test-support', 'contributes.json');
const contributed = JSON.parse(fs.readFileSync(configPath, 'utf8')).contributes.grammars;
const byScope = {};
const injections = {};
for (const g of contributed) {
  const p = path.resolve(path.dirname(configPath), g.path);
  byScope[g.scopeName] = tm.parseRawGrammar(fs.readFileSync(p, 'utf8'), p);
  for (const target of g.injectTo || []) (injections[target] = injections[target] || []).push(g.scopeName);
}
const wasm = fs.readFileSync(path.join(nm, 'vscode-oniguruma', 'release', 'onig.wasm')).buffer;
const registry = new tm.Registry({
  onigLib: onig.loadWASM(wasm).then(() => ({
    createOnigScanner: (p) => new onig.OnigScanner(p),
    createOnigString: (s) => new onig.OnigString(s),
  })),
  loadGrammar: async (s) => byScope[s] || null,
  getInjections: (s) => {
    const parts = s.split('.');
    let out = [];
    for (let i = 1; i <= parts.length; i++) out = out.concat(injections[parts.slice(0, i).join('.')] || []);
    return out;
  },
});
registry.loadGrammar(scope).then((grammar) => {
  let state = tm.INITIAL;
  const ms = [];
  for (const line of fs.readFileSync(file, 'utf8').split(/\r\n|\n/)) {
    const t0 = process.hrtime.bigint();
    state = grammar.tokenizeLine(line, state).ruleStack;
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  process.stdout.write(JSON.stringify({ lines: ms.length, ms }) + '\n');
});

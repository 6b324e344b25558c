#!/usr/bin/env node
// wordnet_glosses.js — the glosses of WordNet 3.0 (Debian wordnet-base: data.noun, data.verb,
// data.adj, data.adv) as plain text, one synset's gloss (definition; example sentences in quotes)
// per line, for BERT pretraining. The gloss is the text after " | " on each data line; the
// license header (lines starting with two spaces) is skipped.
//
//   node tools/wordnet_glosses.js WORDNET_DIR OUT.txt
// Prints the number of glosses on stdout.
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, out] = process.argv.slice(2);
if (!dir || !out) {
    process.stderr.write('usage: node wordnet_glosses.js WORDNET_DIR OUT.txt\n');
    process.exit(2);
}
const glosses = [];
for (const pos of ['noun', 'verb', 'adj', 'adv']) {
    const file = path.join(dir, 'data.' + pos);
    const lines = fs.readFileSync(file, 'latin1').split('\n');
    lines.forEach((line, i) => {
        if (!line || line.startsWith('  ')) return;
        const bar = line.indexOf(' | ');
        if (bar < 0) {
            process.stderr.write(`wordnet_glosses: ${file}:${i + 1}: no " | " before the gloss\n`);
            process.exit(1);
        }
        glosses.push(line.slice(bar + 3).replace(/\s+/g, ' ').trim());
    });
}
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out + '.tmp', glosses.join('\n') + '\n');
fs.renameSync(out + '.tmp', out);
console.log(`${glosses.length}`);

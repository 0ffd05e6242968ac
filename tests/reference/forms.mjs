// The ID forms checked with libraries no one here wrote, for id_forms.py:
// npm's @noble/ciphers (its FF1, NIST SP 800-38G) and npm's uuid.
//
//   node forms.mjs ff1 < job.json    {"key": hex, "tweak": text, "pairs": [[plain, opaque], ...],
//                                     "random": N}: each pair checked both ways with FF1 over
//                                     radix 2, 63 digits; N random 63-bit values encrypted
//   node forms.mjs uuid < uuids.json every UUID: uuid's validate() and version()
//
// JSON in and out, numbers as decimal strings. Run from the directory the
// libraries were installed into.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

const require = createRequire(process.cwd() + '/');
const { FF1 } = require('@noble/ciphers/ff1.js');
const { validate, version } = require('uuid');

const BITS = 63;
// A 63-bit value as FF1's numeral string: binary digits, most significant first.
const digits = (value) => Array.from({ length: BITS }, (_, i) => Number((value >> BigInt(BITS - 1 - i)) & 1n));
const value = (ds) => ds.reduce((v, d) => (v << 1n) | BigInt(d), 0n);

const input = JSON.parse(readFileSync(0, 'utf8'));
const [, , command] = process.argv;
if (command === 'ff1') {
  const key = Uint8Array.from(Buffer.from(input.key, 'hex'));
  const ff1 = FF1(2, key, new TextEncoder().encode(input.tweak));
  const mismatches = [];
  for (const [plain, opaque] of input.pairs) {
    const encrypted = value(ff1.encrypt(digits(BigInt(plain)))).toString();
    const decrypted = value(ff1.decrypt(digits(BigInt(opaque)))).toString();
    if (encrypted !== opaque || decrypted !== plain) mismatches.push({ plain, opaque, encrypted, decrypted });
  }
  // Random values below 2^63, and what noble's FF1 makes of them.
  const random = [];
  for (let i = 0; i < input.random; i++) {
    const v = randomBytes(8).readBigUInt64BE() >> 1n;
    random.push([v.toString(), value(ff1.encrypt(digits(v))).toString()]);
  }
  console.log(JSON.stringify({ checked: input.pairs.length, mismatches, random }));
} else if (command === 'uuid') {
  const wrong = input.filter((u) => !validate(u) || version(u) !== 7);
  console.log(JSON.stringify({ checked: input.length, wrong }));
} else {
  console.error('usage: node forms.mjs ff1|uuid < input.json');
  process.exit(2);
}

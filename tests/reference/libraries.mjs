// Makes and reads IDs with ID libraries no one here wrote, for
// reference_libraries.py: npm's @sapphire/snowflake (Twitter's layout:
// 41 bits of ms | 5 "workerId" | 5 "processId" | 12 increment, any epoch)
// and npm's sonyflake (ms since its epoch | 8 sequence | 16 machine ID).
//
//   node libraries.mjs make            IDs each library makes, with the fields it was given
//   node libraries.mjs read < ids.json the fields each library reads from the given IDs
//
// JSON in and out, IDs as decimal strings. Run with NODE_PATH or from the
// directory the libraries were installed into.
import { createRequire } from 'node:module';

const require = createRequire(process.cwd() + '/');
const { Snowflake } = require('@sapphire/snowflake');
const { Sonyflake } = require('sonyflake');

const [, , command, twitterEpoch, sonyflakeEpoch] = process.argv;
const twitter = new Snowflake(BigInt(twitterEpoch));

function made() {
  const out = { sapphire: [], sonyflake: [] };
  const now = Date.now();
  // Several instants, datacenters, workers and sequences, edges included.
  const cases = [[now, 0, 0, 0], [now - 86_400_000, 31, 31, 4095], [now - 1234, 3, 7, 42], [now, 17, 9, 1]];
  for (const [ms, datacenter, worker, sequence] of cases) {
    const id = twitter.generate({
      timestamp: BigInt(ms), workerId: BigInt(datacenter), processId: BigInt(worker), increment: BigInt(sequence),
    });
    out.sapphire.push({ id: id.toString(), timestamp_ms: ms, datacenter_id: datacenter, worker_id: worker, sequence });
  }
  for (const [ms, machine, sequence] of [[now, 0, 0], [now - 86_400_000, 65535, 255], [now - 99, 2, 17]]) {
    const flake = new Sonyflake({ epoch: Number(sonyflakeEpoch), machineId: machine });
    const id = flake.generateCustomId({ timestamp: ms, sequence });
    out.sonyflake.push({ id, timestamp_ms: ms, worker_id: machine, sequence });
  }
  return out;
}

function read(ids) {
  return {
    sapphire: ids.sapphire.map((id) => {
      const d = twitter.deconstruct(id);
      return { id, timestamp_ms: Number(d.timestamp), datacenter_id: Number(d.workerId),
               worker_id: Number(d.processId), sequence: Number(d.increment) };
    }),
    sonyflake: ids.sonyflake.map((id) => {
      const d = Sonyflake.decompose(id, { epoch: Number(sonyflakeEpoch) });
      return { id, timestamp_ms: d.timestamp, worker_id: d.machineId, sequence: d.sequence };
    }),
  };
}

if (command === 'make') {
  process.stdout.write(JSON.stringify(made()) + '\n');
} else if (command === 'read') {
  let input = '';
  process.stdin.on('data', (chunk) => { input += chunk; });
  process.stdin.on('end', () => process.stdout.write(JSON.stringify(read(JSON.parse(input))) + '\n'));
} else {
  process.stderr.write('usage: node libraries.mjs make|read TWITTER_EPOCH_MS SONYFLAKE_EPOCH_MS\n');
  process.exit(2);
}

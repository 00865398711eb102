// What payload encryption costs. Part 1: the AES-256-GCM codec alone, encode + decode of one payload per
// call, at sizes from a turn reference to a large judge reply, against the JSON payload conversion every
// payload goes through anyway (the baseline, measured in the same run). Part 2: the gateway's durable
// hand-off, a signal-with-start of a session workflow with a turn reference, through a fresh Temporal dev
// server, by a plaintext client and an encrypting one in alternating blocks. Figures only.
//   npx tsx bench/payload-encryption.ts [--calls 2000] [--signals 200] [--rounds 3]

import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { AesGcmPayloadCodec } from '../security/payload-codec.js';
import { PayloadEncryptionPlugin } from '../security/payload-encryption.js';
import { newPayloadKey } from '../security/payload-keys.js';
import { signalWithStartSession } from '../temporal/workflow-starts.js';
import { startDevServerProcess } from './support/dev-server-process.js';
import { reportLoad } from './support/machine-load.js';
import { intOptions, median, ms, p99, printTable, ratio } from './support/stats.js';

const options = intOptions(
  { calls: 2000, signals: 200, rounds: 3 },
  'npx tsx bench/payload-encryption.ts: the payload codec alone, then signal-with-start plaintext vs encrypted',
);
Runtime.install({ logger: new DefaultLogger('WARN') });

const ring = { currentId: 'bench', keys: new Map([['bench', newPayloadKey()]]) };
const codec = new AesGcmPayloadCodec(ring);

function payloadValue(bytes: number): unknown {
  return { sessionId: 'bench-session', turn: 3, text: 'x'.repeat(Math.max(0, bytes - 60)) };
}

async function timePerCall(calls: number, call: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  return times;
}

const loadAtEnd = reportLoad('encryption bench');
console.log('## codec alone: one payload per call (encode then decode)\n');
const codecRows: string[][] = [];
for (const bytes of [200, 4 * 1024, 64 * 1024, 1024 * 1024]) {
  const value = payloadValue(bytes);
  const calls = bytes >= 1024 * 1024 ? Math.max(20, options.calls / 50) : options.calls;
  const convert = async () => defaultPayloadConverter.fromPayload(defaultPayloadConverter.toPayload(value));
  const encrypt = async () => {
    const [sealed] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
    const [opened] = await codec.decode([sealed as Payload]);
    return defaultPayloadConverter.fromPayload(opened as Payload);
  };
  await timePerCall(Math.min(50, calls), encrypt); // warm-up
  const plain = await timePerCall(calls, convert);
  const sealed = await timePerCall(calls, encrypt);
  codecRows.push([
    bytes >= 1024 ? `${bytes / 1024} KiB` : `${bytes} B`,
    String(calls),
    ms(median(plain)),
    ms(median(sealed)),
    ms(p99(sealed)),
    `+${ms(median(sealed) - median(plain))}`,
  ]);
}
printTable(['payload', 'calls', 'JSON only (median)', 'JSON + AES-GCM (median)', 'p99', 'added'], codecRows);

console.log('\n## signal-with-start of a session workflow (the gateway hand-off), fresh dev server\n');
const server = await startDevServerProcess(null);
const plainConnection = await Connection.connect({ address: server.address });
const sealedConnection = await Connection.connect({
  address: server.address,
  plugins: [new PayloadEncryptionPlugin(ring)],
});
const clients = {
  plaintext: new Client({ connection: plainConnection }),
  encrypted: new Client({ connection: sealedConnection }),
};
const times: Record<keyof typeof clients, number[]> = { plaintext: [], encrypted: [] };
let counter = 0;
const handOff = (client: Client) => {
  const sessionId = `bench-${process.pid}-${counter++}`;
  const input = {
    sessionId,
    runId: 'bench',
    method: 'combine' as const,
    judgeVotes: 1,
    idleTimeoutMs: 60_000,
    continueAsNewAfterTurns: 200,
  };
  const ref = { sessionId, turn: 1, sampleId: `${sessionId}:1`, policyVersion: 0, kind: 'main' as const };
  // Nothing polls this queue: the hand-off is what is measured, not the session workflow.
  return signalWithStartSession(
    client,
    { sessionId, taskQueue: 'bench-encryption-unpolled', input },
    { kind: 'turn', ref },
  );
};
try {
  await timePerCall(20, () => handOff(clients.encrypted)); // warm-up
  await timePerCall(20, () => handOff(clients.plaintext));
  for (let round = 0; round < options.rounds; round++) {
    const order =
      round % 2 === 0 ? (['plaintext', 'encrypted'] as const) : (['encrypted', 'plaintext'] as const);
    for (const name of order)
      times[name].push(...(await timePerCall(options.signals, () => handOff(clients[name]))));
  }
  printTable(
    ['client', 'signal-with-start calls', 'median', 'p99'],
    (['plaintext', 'encrypted'] as const).map((name) => [
      name,
      String(times[name].length),
      ms(median(times[name])),
      ms(p99(times[name])),
    ]),
  );
  console.log(`\nencrypted / plaintext, median: ${ratio(median(times.encrypted) / median(times.plaintext))}`);
} finally {
  await plainConnection.close();
  await sealedConnection.close();
  await server.stop();
}
loadAtEnd();

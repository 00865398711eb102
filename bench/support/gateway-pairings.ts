// How the gateway's main turns paired with the turns they continue, read from its Prometheus counter
// (`openclaw_gateway_turn_pairings_total`), so a benchmark can show that its turns found what they continue.

const PAIRINGS = ['continuation', 'reply', 'unmatched', 'none'] as const;
export type PairingCounts = Record<(typeof PAIRINGS)[number], number>;

/** The counter's values now, by pairing (0 where the gateway has not counted one). */
export async function gatewayPairings(gatewayUrl: string): Promise<PairingCounts> {
  const response = await fetch(`${gatewayUrl}/metrics`);
  if (!response.ok) throw new Error(`${gatewayUrl}/metrics: HTTP ${response.status}`);
  const text = await response.text();
  const counts = Object.fromEntries(PAIRINGS.map((pairing) => [pairing, 0])) as PairingCounts;
  for (const pairing of PAIRINGS) {
    const line = new RegExp(`^openclaw_gateway_turn_pairings_total\\{pairing="${pairing}"\\} (\\S+)$`, 'm');
    counts[pairing] = Number(line.exec(text)?.[1] ?? 0);
  }
  return counts;
}

/** The turns counted between two readings, as `continuation 140, reply 0, unmatched 0, none 20`. */
export function describePairings(before: PairingCounts, after: PairingCounts): string {
  return PAIRINGS.map((pairing) => `${pairing} ${after[pairing] - before[pairing]}`).join(', ');
}

// The gateway's own figures, read from its Prometheus text (`GET /metrics`) the way a scraper would: a test
// compares two readings to learn what the gateway served, and took how long, in between.

/** The counters and histogram sums a test compares (chat completions only). */
export interface GatewayReading {
  /** Chat-completion requests answered (any status). */
  chatRequests: number;
  /** Seconds those requests took at the gateway, from request to the end of the response. */
  chatSeconds: number;
  /** Streaming requests: seconds from request to the first generated token (queue and prefill). */
  firstTokenSeconds: number;
  mainTurns: number;
  sideTurns: number;
}

const CHAT_ROUTE = 'route="/v1/chat/completions"';

export async function readGateway(gatewayUrl: string): Promise<GatewayReading> {
  const origin = new URL(gatewayUrl).origin;
  const response = await fetch(`${origin}/metrics`);
  if (!response.ok) throw new Error(`GET ${origin}/metrics: ${response.status}`);
  const text = await response.text();
  return {
    chatRequests: sample(text, 'openclaw_gateway_request_duration_seconds_count', CHAT_ROUTE),
    chatSeconds: sample(text, 'openclaw_gateway_request_duration_seconds_sum', CHAT_ROUTE),
    firstTokenSeconds: sample(text, 'openclaw_gateway_time_to_first_token_seconds_sum'),
    mainTurns: sample(text, 'openclaw_gateway_turns_total', 'turn_type="main"'),
    sideTurns: sample(text, 'openclaw_gateway_turns_total', 'turn_type="side"'),
  };
}

/** The value of the series `name{...label...}`, or `name` unlabelled (0 until the gateway reports it). */
function sample(text: string, name: string, label?: string): number {
  for (const line of text.split('\n')) {
    const series = line.slice(0, line.lastIndexOf(' '));
    const matches = label
      ? series.startsWith(`${name}{`) && series.slice(name.length).includes(label)
      : series === name;
    if (matches) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

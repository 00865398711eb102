// What a policy URL serves, asked once before any episode runs: that it answers `GET /v1/models` (an
// OpenAI-compatible server), and whether it has the tokenize route the engine kind's adapter renders prompts
// with. A server without it (a hosted API, a plain OpenAI-compatible server) returns text only: its episodes
// can be scored but not trained, so a rollout runs them text-only and a training run is refused at start.

import { ENGINE_KINDS, type EngineKind } from '../core/engine-kinds.js';
import { EngineHttp, EngineHttpError } from './engine-http.js';

export interface PolicyEndpoint {
  /** The model ids `GET /v1/models` listed. */
  models: string[];
  /** The engine kind's tokenize route answered (anything but 404/405): exact token ids can be had. */
  tokenIds: boolean;
  /** The route probed, for messages. */
  tokenizePath: string;
}

export class PolicyEndpointError extends Error {
  override name = 'PolicyEndpointError';
}

/** The route each engine kind's adapter renders and tokenises with. */
export function tokenizePathOf(engine: EngineKind): string {
  return engine === 'vllm' ? '/tokenize' : '/v1/tokenize';
}

/** Why a text-only policy cannot train, naming the engine kinds that can. */
export function textOnlyReason(url: string, tokenizePath: string): string {
  return (
    `the policy at ${url} has no ${tokenizePath} (a plain OpenAI-compatible endpoint): it returns text, not the ` +
    `token ids and log-probs training needs; engines that can train: ${ENGINE_KINDS.join(', ')}`
  );
}

export async function probePolicyEndpoint(
  url: string,
  options: { engine?: EngineKind; apiKey?: string; timeoutMs?: number } = {},
): Promise<PolicyEndpoint> {
  const http = new EngineHttp(url, {
    timeoutMs: options.timeoutMs ?? 15_000,
    ...(options.apiKey && { headers: { authorization: `Bearer ${options.apiKey}` } }),
  });
  let listed: unknown;
  try {
    listed = await http.json('GET', '/v1/models');
  } catch (error) {
    throw new PolicyEndpointError(
      `the policy at ${url} did not answer GET /v1/models: ${(error as Error).message}`,
    );
  }
  const data = (listed as { data?: unknown } | null)?.data;
  const models = Array.isArray(data)
    ? data.map((m) => (m as { id?: unknown })?.id).filter((id): id is string => typeof id === 'string')
    : [];
  const tokenizePath = tokenizePathOf(options.engine ?? 'reference');
  let tokenIds = true;
  try {
    const answer = await http.send('POST', tokenizePath, { prompt: 'probe', add_special_tokens: false });
    await answer.text();
  } catch (error) {
    // Only "no such route" says the route is missing; a 4xx about the body means it is there.
    if (error instanceof EngineHttpError && (error.status === 404 || error.status === 405)) tokenIds = false;
    else if (!(error instanceof EngineHttpError && error.kind === 'client_error')) throw error;
  }
  return { models, tokenIds, tokenizePath };
}

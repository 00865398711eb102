// What a rollout's policy can do, asked once at start (engines/policy-endpoint-probe.ts) instead of an episode
// failing inside on a route the server lacks: an engine with exact tokens (the rollout could be trained), or a
// plain OpenAI-compatible endpoint, whose rollout runs text-only and is evaluated only. A training run is
// refused at start with such a policy, naming the engine kinds that can train.

import type { OpenClawConfig } from '../core/config.js';
import type { PolicySettings } from '../core/rollout-settings.js';
import { probePolicyEndpoint, textOnlyReason } from '../engines/policy-endpoint-probe.js';
import { engineToken } from '../security/engine-token.js';

export type RolloutMode = 'trainable' | 'evaluate-only';

export interface PolicyPlan {
  /** The mode the policy is sent with (`chat` when the endpoint has no token ids and none was asked for). */
  policyMode: PolicySettings['mode'];
  mode: RolloutMode;
  /** Why the rollout is evaluate-only; null when it could be trained. */
  reason: string | null;
}

type PolicyInput = { url: string; mode?: PolicySettings['mode']; engine?: PolicySettings['engine'] };

/**
 * The rollout's plan: gateway mode is not probed (the gateway returns exact tokens); a chat policy is
 * evaluate-only; engine mode needs the tokenize route, and without it an unset mode falls back to chat while
 * an explicit `engine` is refused.
 */
export async function planRolloutPolicy(
  policy: PolicyInput,
  options: { apiKey?: string; timeoutMs?: number } = {},
): Promise<PolicyPlan> {
  if (policy.mode === 'gateway') return { policyMode: 'gateway', mode: 'trainable', reason: null };
  const endpoint = await probePolicyEndpoint(policy.url, { engine: policy.engine, ...options });
  if (policy.mode === 'chat')
    return {
      policyMode: 'chat',
      mode: 'evaluate-only',
      reason: 'chat mode: text only, no token ids or log-probs to train on',
    };
  if (endpoint.tokenIds) return { policyMode: 'engine', mode: 'trainable', reason: null };
  const reason = textOnlyReason(policy.url, endpoint.tokenizePath);
  if (policy.mode === 'engine')
    throw new Error(`--mode engine refused: ${reason}; evaluate it with --mode chat`);
  return { policyMode: 'chat', mode: 'evaluate-only', reason };
}

/** Refuses a training run whose engine-mode policy cannot return token ids (a gateway policy is not probed). */
export async function checkTrainablePolicy(
  policy: PolicyInput,
  options: { apiKey?: string; timeoutMs?: number } = {},
): Promise<void> {
  // Chat mode is refused by the run's input schema; gateway mode is not probed.
  if (policy.mode === 'gateway' || policy.mode === 'chat') return;
  const endpoint = await probePolicyEndpoint(policy.url, { engine: policy.engine, ...options });
  if (!endpoint.tokenIds)
    throw new Error(`training refused: ${textOnlyReason(policy.url, endpoint.tokenizePath)}`);
}

/**
 * The key the probe sends: the hosted API's (`OPENCLAW_POLICY_API_KEY`, which the env hosts send too), else the
 * engine token (what the env hosts send to an engine).
 */
export function probeKey(config: OpenClawConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.OPENCLAW_POLICY_API_KEY || engineToken(config) || undefined;
}

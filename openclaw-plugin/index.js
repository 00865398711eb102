// @ts-check
// OpenClaw plugin for an openclaw-rl gateway. Upstream OpenClaw sends no session metadata, so the gateway can only
// guess which conversation a model call belongs to and cannot tell a user's turn from a heartbeat. This plugin
// owns the `openclaw-rl` provider (configured as `models.providers["openclaw-rl"]`) and adds to each of its model
// calls:
//   X-Session-Id   OpenClaw's session id (the stream options' `sessionId`);
//   X-Turn-Type    `main` for user-triggered runs, `side` for heartbeats, memory flushes and other maintenance
//                  runs (their trigger is learnt from the `agent_turn_prepare` hook, keyed by run id);
// and, when OpenClaw ends a session (`/new`, `/reset`, deletion, idle or daily rollover, compaction), sends the
// gateway one side request with `X-Session-Done: true` so the session's last turn is settled right away. The
// API key is the provider's own `apiKey` (sent as a bearer token by OpenClaw and by this plugin).
//
// It also registers the chat commands `/good`, `/bad [what I meant]`, `/fix <what I meant>` and `/rate <-1..1>
// [what I meant]`: OpenClaw runs them without a model call, and the plugin posts the rating (and correction) to
// the gateway's `/v1/feedback` for the session's latest main turn.
//
// Headers are computed per model call from that call's own stream options (no state shared between runs), so
// concurrent runs of different sessions in one OpenClaw process each stamp their own session id.
//
// Plain JavaScript (types in JSDoc, checked by the repository's `tsc`): OpenClaw installs a plugin package from a
// path or an npm-pack archive only as JavaScript, so there is no build step. Typed against OpenClaw 2026.9.6's
// plugin API (openclaw/dist/plugin-entry-*.d.ts); only the members used here are declared.

export const PLUGIN_ID = 'openclaw-rl';
export const PROVIDER_ID = 'openclaw-rl';
/** OpenClaw run triggers (`EmbeddedRunTrigger`) whose model calls are not user turns. */
export const DEFAULT_SIDE_TRIGGERS = /** @type {readonly string[]} */ (['heartbeat', 'memory', 'overflow']);
/** `session_end` reasons after which the conversation will not continue under the same session id. */
export const SESSION_DONE_REASONS = /** @type {ReadonlySet<string>} */ (
  new Set(['new', 'reset', 'deleted', 'idle', 'daily', 'compaction'])
);
const END_REQUEST_TIMEOUT_MS = 15_000;
const FEEDBACK_TIMEOUT_MS = 15_000;
const REMEMBERED_RUNS = 1024;

// ---------------------------------------------------------------------------------------------- OpenClaw's API
/**
 * @typedef {{ sessionId?: string, requestId?: string, headers?: Record<string, string>, [key: string]: unknown }} StreamOptions
 *   `requestId` is `<runId>:model:<n>` for the embedded runner's model calls.
 * @typedef {(model: unknown, context: unknown, options?: StreamOptions) => unknown} StreamFn
 * @typedef {{ runId?: string, sessionId?: string, trigger?: string }} HookContext
 * @typedef {{ sessionId: string, reason?: string }} SessionEndEvent
 * @typedef {{ baseUrl?: string, apiKey?: unknown, models?: { id?: string }[] }} ProviderConfig
 * @typedef {{
 *   config?: {
 *     models?: { providers?: Record<string, ProviderConfig | undefined> },
 *     plugins?: { entries?: Record<string, { hooks?: { allowConversationAccess?: boolean } } | undefined> },
 *   },
 *   pluginConfig?: Record<string, unknown>,
 *   logger: { info(message: string): void, warn(message: string): void },
 *   registerProvider(provider: {
 *     id: string, label: string, docsPath?: string, auth: unknown[],
 *     wrapStreamFn?: (ctx: { streamFn?: StreamFn }) => StreamFn | undefined,
 *   }): void,
 *   on(hook: string, handler: (event: any, ctx: HookContext) => unknown): void,
 *   registerCommand(command: CommandDefinition): void,
 * }} PluginApi
 * @typedef {{
 *   sessionId?: string, sessionKey?: string, args?: string, commandBody: string,
 *   config?: PluginApi['config'],
 * }} CommandContext
 *   What a command handler is given (OpenClaw's `PluginCommandContext`): `sessionId` is the active session's id,
 *   the one its model calls carry as `stream options.sessionId`; `args` is the text after the command name.
 * @typedef {{ text?: string }} CommandResult  Shown to the user as the command's reply (`ReplyPayload`).
 * @typedef {{
 *   name: string, description: string, acceptsArgs?: boolean,
 *   handler: (ctx: CommandContext) => CommandResult | Promise<CommandResult>,
 * }} CommandDefinition
 *   OpenClaw's `OpenClawPluginCommandDefinition`: `/name` runs `handler` instead of the agent. Without
 *   `acceptsArgs`, `/name something` is not the command (the message goes to the model).
 */

// ---------------------------------------------------------------------------------------------- turn identity
/** Which trigger started each recent run (and, as a fallback, each session's latest run). */
export class TurnTypes {
  /** @type {Map<string, string>} */
  runs = new Map();
  /** @type {Map<string, string>} */
  sessions = new Map();

  /** @param {ReadonlySet<string>} sideTriggers */
  constructor(sideTriggers) {
    this.sideTriggers = sideTriggers;
  }

  /** @param {HookContext} ctx */
  noteRun(ctx) {
    if (!ctx.trigger) return;
    if (ctx.runId) {
      this.runs.set(ctx.runId, ctx.trigger);
      if (this.runs.size > REMEMBERED_RUNS)
        this.runs.delete(/** @type {string} */ (this.runs.keys().next().value));
    }
    if (ctx.sessionId) this.sessions.set(ctx.sessionId, ctx.trigger);
  }

  /**
   * The headers for one model call; a header the caller already set wins.
   * @param {StreamOptions | undefined} options
   * @returns {Record<string, string>}
   */
  headers(options) {
    const sessionId = options?.sessionId;
    const runId = options?.requestId?.split(':model:')[0];
    const trigger = (runId && this.runs.get(runId)) || (sessionId && this.sessions.get(sessionId)) || 'user';
    /** @type {Record<string, string>} */
    const ours = { 'X-Turn-Type': this.sideTriggers.has(trigger) ? 'side' : 'main' };
    if (sessionId) ours['X-Session-Id'] = sessionId;
    return { ...ours, ...options?.headers };
  }
}

/**
 * The request that tells the gateway a session is over: a one-token side turn carrying `X-Session-Done`.
 * @param {ProviderConfig} provider
 * @param {string} sessionId
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ url: string, init: RequestInit } | null}
 */
export function sessionDoneRequest(provider, sessionId, env = process.env) {
  if (!provider.baseUrl) return null;
  /** @type {Record<string, string>} */
  const headers = {
    'content-type': 'application/json',
    'X-Session-Id': sessionId,
    'X-Turn-Type': 'side',
    'X-Session-Done': 'true',
  };
  const apiKey = resolveSecret(provider.apiKey, env);
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  const body = {
    model: provider.models?.[0]?.id ?? 'default',
    messages: [{ role: 'user', content: 'The user ended this session.' }],
    max_tokens: 1,
  };
  return {
    url: `${provider.baseUrl.replace(/\/+$/, '')}/chat/completions`,
    init: { method: 'POST', headers, body: JSON.stringify(body) },
  };
}

// ---------------------------------------------------------------------------------------------- feedback
/** @typedef {{ rating?: number, correction?: string }} Feedback  A rating in [-1, 1] and/or what the user meant. */

/** The chat commands, what each sends, and its help text. */
export const FEEDBACK_COMMANDS = /** @type {const} */ ([
  { name: 'good', acceptsArgs: false, description: 'Rate the last reply good (trains the model)' },
  { name: 'bad', acceptsArgs: true, description: 'Rate the last reply bad: /bad [what you meant]' },
  { name: 'fix', acceptsArgs: true, description: 'Rate it bad and say what you meant: /fix <text>' },
  { name: 'rate', acceptsArgs: true, description: 'Rate it from -1 to 1: /rate <score> [what you meant]' },
]);

/**
 * What a feedback command asks for, from its name and arguments; a string is the usage to show instead.
 * @param {string} name `good`, `bad`, `fix` or `rate`
 * @param {string | undefined} args
 * @returns {Feedback | string}
 */
export function parseFeedbackCommand(name, args) {
  const text = (args ?? '').trim();
  switch (name) {
    case 'good':
      return { rating: 1 };
    case 'bad':
      return text ? { rating: -1, correction: text } : { rating: -1 };
    case 'fix':
      return text ? { rating: -1, correction: text } : 'Usage: /fix <what you meant>';
    case 'rate': {
      const [score = '', ...rest] = text.split(/\s+/);
      const rating = Number(score);
      if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(score) || rating < -1 || rating > 1)
        return 'Usage: /rate <score from -1 to 1> [what you meant]';
      const correction = rest.join(' ').trim();
      return correction ? { rating, correction } : { rating };
    }
    default:
      return `Unknown feedback command /${name}`;
  }
}

/**
 * The request that gives feedback on a session's latest main turn (`POST <baseUrl>/feedback`).
 * @param {ProviderConfig} provider
 * @param {string} sessionId the id the session's model calls carry as `X-Session-Id`
 * @param {Feedback} feedback
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ url: string, init: RequestInit } | null}
 */
export function feedbackRequest(provider, sessionId, feedback, env = process.env) {
  if (!provider.baseUrl) return null;
  /** @type {Record<string, string>} */
  const headers = { 'content-type': 'application/json' };
  const apiKey = resolveSecret(provider.apiKey, env);
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  return {
    url: `${provider.baseUrl.replace(/\/+$/, '')}/feedback`,
    init: { method: 'POST', headers, body: JSON.stringify({ session_id: sessionId, ...feedback }) },
  };
}

/**
 * The reply a feedback command shows once the gateway answered.
 * @param {Feedback} feedback
 * @param {number} status
 * @param {unknown} body the gateway's JSON answer (an OpenAI error object on failure), or null
 * @returns {string}
 */
export function feedbackReply(feedback, status, body) {
  if (status >= 200 && status < 300) {
    const rating = feedback.rating ?? 0;
    const mark = rating === 1 ? '👍' : rating === -1 ? '👎' : `rating ${rating}`;
    return `Feedback sent on the last turn: ${mark}${feedback.correction ? ', with your correction' : ''}.`;
  }
  const error = /** @type {{ error?: { message?: unknown } } | null} */ (body)?.error;
  const message = typeof error?.message === 'string' ? error.message : `HTTP ${status}`;
  return `Feedback not sent: ${message}`;
}

/**
 * Sends feedback on the session's latest main turn and says how it went, in words for the user.
 * @param {ProviderConfig | undefined} provider
 * @param {string | undefined} sessionId
 * @param {Feedback} feedback
 * @returns {Promise<string>}
 */
export async function sendFeedback(provider, sessionId, feedback) {
  if (!sessionId) return 'Feedback not sent: this conversation has no OpenClaw session yet.';
  const request = provider ? feedbackRequest(provider, sessionId, feedback) : null;
  if (!request) return `Feedback not sent: models.providers.${PROVIDER_ID}.baseUrl is not configured.`;
  try {
    const response = await fetch(request.url, {
      ...request.init,
      signal: AbortSignal.timeout(FEEDBACK_TIMEOUT_MS),
    });
    const text = await response.text();
    /** @type {unknown} */
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON (a proxy's error page): the status says it
    }
    return feedbackReply(feedback, response.status, body);
  } catch (error) {
    return `Feedback not sent: the gateway did not answer (${error instanceof Error ? error.message : error}).`;
  }
}

/**
 * A provider `apiKey` as OpenClaw config holds it: a string, possibly `${ENV_VAR}`.
 * @param {unknown} value
 * @param {NodeJS.ProcessEnv} env
 * @returns {string | undefined}
 */
function resolveSecret(value, env) {
  if (typeof value !== 'string' || value === '') return undefined;
  const ref = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(value);
  return ref ? env[/** @type {string} */ (ref[1])] : value;
}

// ---------------------------------------------------------------------------------------------- the plugin
/** @param {PluginApi} api */
function register(api) {
  const settings = api.pluginConfig ?? {};
  const sideTriggers = Array.isArray(settings.sideTriggers)
    ? settings.sideTriggers.filter(/** @returns {t is string} */ (t) => typeof t === 'string')
    : DEFAULT_SIDE_TRIGGERS;
  const debug = settings.debug === true;
  const turnTypes = new TurnTypes(new Set(sideTriggers));
  if (api.config?.plugins?.entries?.[PLUGIN_ID]?.hooks?.allowConversationAccess !== true)
    api.logger.warn(
      `${PLUGIN_ID}: plugins.entries.${PLUGIN_ID}.hooks.allowConversationAccess is not true, so run triggers ` +
        'are unknown and only heartbeats are sent as side turns (memory flushes would be trained as main turns).',
    );

  api.registerProvider({
    id: PROVIDER_ID,
    label: 'openclaw-rl gateway',
    auth: [],
    wrapStreamFn: ({ streamFn }) => {
      if (!streamFn) return undefined;
      return (model, context, options) => {
        const headers = turnTypes.headers(options);
        if (debug) api.logger.info(`${PLUGIN_ID}: ${JSON.stringify(headers)}`);
        return streamFn(model, context, { ...options, headers });
      };
    },
  });
  api.on('agent_turn_prepare', (_event, ctx) => turnTypes.noteRun(ctx));
  // Needs no conversation access: heartbeats are known even where agent_turn_prepare is not granted.
  api.on('heartbeat_prompt_contribution', (_event, ctx) =>
    turnTypes.noteRun({ ...ctx, trigger: 'heartbeat' }),
  );

  for (const command of FEEDBACK_COMMANDS)
    api.registerCommand({
      ...command,
      handler: async (ctx) => {
        const feedback = parseFeedbackCommand(command.name, ctx.args);
        if (typeof feedback === 'string') return { text: feedback };
        const provider = (ctx.config ?? api.config)?.models?.providers?.[PROVIDER_ID];
        const text = await sendFeedback(provider, ctx.sessionId, feedback);
        if (debug) api.logger.info(`${PLUGIN_ID}: /${command.name} on session ${ctx.sessionId}: ${text}`);
        return { text };
      },
    });

  if (settings.endSessions === false) return;
  api.on('session_end', async (/** @type {SessionEndEvent} */ event) => {
    if (!event.reason || !SESSION_DONE_REASONS.has(event.reason)) return;
    const provider = api.config?.models?.providers?.[PROVIDER_ID];
    const request = provider ? sessionDoneRequest(provider, event.sessionId) : null;
    if (!request) return;
    try {
      const response = await fetch(request.url, {
        ...request.init,
        signal: AbortSignal.timeout(END_REQUEST_TIMEOUT_MS),
      });
      await response.body?.cancel();
      if (debug || !response.ok)
        api.logger.info(
          `${PLUGIN_ID}: session ${event.sessionId} ended (${event.reason}): ${response.status}`,
        );
    } catch (error) {
      // The gateway's idle timer closes the session anyway; only the last turn's settling waits.
      api.logger.warn(`${PLUGIN_ID}: could not tell the gateway session ${event.sessionId} ended: ${error}`);
    }
  });
}

export default {
  id: PLUGIN_ID,
  name: 'openclaw-rl training headers',
  description:
    'Sends X-Session-Id, X-Turn-Type and X-Session-Done to an openclaw-rl gateway, and /good, /bad, /fix, /rate feedback',
  register,
};

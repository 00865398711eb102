import { z } from 'zod';

/**
 * A client for SGLang's HTTP API, the subset the project uses. The reference engine implements the same
 * routes, so this talks to either. Responses are parsed with zod at this boundary: a field SGLang renamed
 * fails here, loudly, instead of corrupting a sample downstream.
 */

const logprobEntry = z
  .tuple([z.number().nullable(), z.number().int(), z.string().nullable().optional()])
  .rest(z.unknown());
const topLogprobsRow = z.array(logprobEntry).nullable();

export const generateResponseSchema = z.object({
  text: z.string(),
  output_ids: z.array(z.number().int()),
  meta_info: z
    .object({
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
      finish_reason: z.unknown(),
      weight_version: z.union([z.string(), z.number()]).optional(),
      output_token_logprobs: z.array(logprobEntry).optional(),
      input_token_logprobs: z.array(logprobEntry).optional(),
      input_top_logprobs: z.array(topLogprobsRow).optional(),
      output_top_logprobs: z.array(topLogprobsRow).optional(),
    })
    .loose(),
});
export type GenerateResponse = z.infer<typeof generateResponseSchema>;

export interface SamplingParams {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  max_new_tokens?: number;
  stop?: string | string[];
  stop_token_ids?: number[];
  seed?: number;
  ignore_eos?: boolean;
  skip_special_tokens?: boolean;
}

export interface GenerateRequest {
  text?: string;
  input_ids?: number[];
  sampling_params?: SamplingParams;
  return_logprob?: boolean;
  logprob_start_len?: number;
  top_logprobs_num?: number;
}

const modelInfoSchema = z.object({ weight_version: z.union([z.string(), z.number()]) }).loose();
const updateWeightsSchema = z.object({ success: z.boolean(), message: z.string() }).loose();

export class PolicyEngineError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly body: string,
  ) {
    super(message);
    this.name = 'PolicyEngineError';
  }
}

export class PolicyEngineClient {
  constructor(
    readonly baseUrl: string,
    private readonly timeoutMs = 120_000,
  ) {}

  health(): Promise<boolean> {
    return fetch(`${this.baseUrl}/health`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => r.ok,
      () => false,
    );
  }

  async modelInfo(): Promise<z.infer<typeof modelInfoSchema>> {
    return modelInfoSchema.parse(await this.request('GET', '/get_model_info'));
  }

  async generate(body: GenerateRequest): Promise<GenerateResponse> {
    return generateResponseSchema.parse(await this.request('POST', '/generate', body));
  }

  /** Loads a checkpoint folder into the serving engine; resolves once the new weights serve. */
  async updateWeightsFromDisk(
    modelPath: string,
    weightVersion: string,
  ): Promise<z.infer<typeof updateWeightsSchema>> {
    const result = updateWeightsSchema.parse(
      await this.request('POST', '/update_weights_from_disk', {
        model_path: modelPath,
        weight_version: weightVersion,
      }),
    );
    if (!result.success)
      throw new PolicyEngineError(`update_weights_from_disk failed: ${result.message}`, 200, '');
    return result;
  }

  async request(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    timeoutMs = this.timeoutMs,
  ): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: body === undefined ? undefined : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new PolicyEngineError(`${method} ${path}: ${(error as Error).message}`, undefined, '');
    }
    const text = await response.text();
    if (!response.ok)
      throw new PolicyEngineError(
        `${method} ${path}: HTTP ${response.status}: ${text}`,
        response.status,
        text,
      );
    return JSON.parse(text) as unknown;
  }
}

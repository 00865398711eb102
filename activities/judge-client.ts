import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { JudgePromptMessage } from '../core/judge-prompts.js';

/** Anything that answers judge prompts: an OpenAI-compatible endpoint (an API, SGLang, the reference engine). */
export interface Judge {
  complete(messages: JudgePromptMessage[], options: { seed?: number }): Promise<string>;
}

export interface OpenAIJudgeOptions {
  baseUrl: string;
  model: string;
  apiKey: string;
  temperature: number;
  maxTokens: number;
  /** Per call; the activity's retries handle what outlasts it. */
  timeoutMs?: number;
}

export class OpenAIJudge implements Judge {
  private readonly client: OpenAI;

  constructor(private readonly options: OpenAIJudgeOptions) {
    // Retries belong to the Temporal activity (durable, visible in history), not to the HTTP client.
    this.client = new OpenAI({
      baseURL: options.baseUrl,
      apiKey: options.apiKey || 'none',
      maxRetries: 0,
      timeout: options.timeoutMs ?? 120_000,
    });
  }

  async complete(messages: JudgePromptMessage[], { seed }: { seed?: number }): Promise<string> {
    const response = await this.client.chat.completions.create({
      model: this.options.model,
      messages: messages.map(toOpenAIMessage),
      temperature: this.options.temperature,
      max_tokens: this.options.maxTokens,
      ...(seed !== undefined && { seed }),
    });
    const content = response.choices[0]?.message?.content;
    if (typeof content !== 'string') throw new Error('judge returned no message content');
    return content;
  }
}

/** A judge message as OpenAI's API takes it: its images, if any, as `image_url` parts after its text. */
function toOpenAIMessage(message: JudgePromptMessage): ChatCompletionMessageParam {
  if (message.role === 'system' || !message.images?.length)
    return { role: message.role, content: message.content };
  return {
    role: 'user',
    content: [
      { type: 'text', text: message.content },
      ...message.images.map((url) => ({ type: 'image_url' as const, image_url: { url } })),
    ],
  };
}

import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { AiSdkLanguageModel } from '@baton/core';
import { AgentConfigError } from './agent-config-error.ts';
import type { ProviderConfig } from './agents-file-schema.ts';

/** The environment variable each built-in provider reads its key from (the SDKs' own names). */
export const PROVIDER_KEY_ENV = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The AI SDK model for `provider:model-id`. Keys are read here, at start-up, so a worker without
 * one stops before it takes a job instead of failing every run that reaches the model.
 */
export function createProviderModel(
  model: string,
  providers: Readonly<Record<string, ProviderConfig>>,
  env: Env,
  where: string,
): AiSdkLanguageModel {
  const colon = model.indexOf(':');
  const name = model.slice(0, colon);
  const modelId = model.slice(colon + 1);
  const declared = providers[name];
  const type = declared?.type ?? (name as keyof typeof PROVIDER_KEY_ENV);
  const keyEnv = declared
    ? declared.apiKeyEnv
    : PROVIDER_KEY_ENV[type as keyof typeof PROVIDER_KEY_ENV];
  const apiKey = keyEnv === undefined ? undefined : env[keyEnv];
  if (keyEnv !== undefined && !apiKey)
    throw new AgentConfigError(
      'agents_missing_env',
      `${where}: "${model}" needs the environment variable ${keyEnv}; set it (or remove the agent)`,
    );
  const base = {
    ...(declared ? { baseURL: declared.baseURL } : {}),
    ...(declared?.headers ? { headers: declared.headers } : {}),
  };
  switch (type) {
    case 'openai': {
      const openai = createOpenAI({ ...base, ...(apiKey ? { apiKey } : {}) });
      // Servers at another base URL speak Chat Completions far more often than Responses.
      return declared ? openai.chat(modelId) : openai(modelId);
    }
    case 'anthropic':
      return createAnthropic({ ...base, ...(apiKey ? { apiKey } : {}) })(modelId);
    case 'google':
      return createGoogleGenerativeAI({ ...base, ...(apiKey ? { apiKey } : {}) })(modelId);
    case 'openai-compatible':
      return createOpenAICompatible({
        name,
        baseURL: declared?.baseURL ?? '',
        ...(apiKey ? { apiKey } : {}),
        ...(declared?.headers ? { headers: declared.headers } : {}),
        includeUsage: true,
      }).chatModel(modelId);
  }
}

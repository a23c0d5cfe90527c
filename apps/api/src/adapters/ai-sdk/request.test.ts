import { BatonError } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { decisionIdFor } from '../shared.ts';
import { approvalTurn, clientToolTurn, pendingOf } from '@baton/testing/api-scenarios';
import { requestToCommands } from './request.ts';

const user = (text: string, id = 'u1') => ({ id, role: 'user', parts: [{ type: 'text', text }] });
const assistant = (parts: unknown[], id = 'a1') => ({ id, role: 'assistant', parts });
const body = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  id: 't1',
  messages,
  trigger: 'submit-message',
  messageId: undefined,
  agent: 'ops',
  ...extra,
});
const deployPart = (state: string, extra: Record<string, unknown> = {}) => ({
  type: 'tool-deploy',
  toolCallId: 'call_1',
  state,
  input: { env: 'prod' },
  ...extra,
});
const askPart = (state: string, extra: Record<string, unknown> = {}) => ({
  type: 'dynamic-tool',
  toolName: 'ask',
  toolCallId: 'call_q',
  state,
  input: { question: 'yes or no?' },
  ...extra,
});

const approvalPending = pendingOf(approvalTurn());
const clientPending = pendingOf(clientToolTurn());
const approvalId = decisionIdFor('ai-sdk', approvalPending.await!.calls[0]!);
const clientId = decisionIdFor('ai-sdk', clientPending.await!.calls[0]!);

describe('requestToCommands', () => {
  it.each([
    {
      name: 'a new user message starts a run on the chat thread',
      body: body([
        user('hello'),
        assistant([{ type: 'text', text: 'hi' }], 'a0'),
        user('deploy prod', 'u2'),
      ]),
      pending: null,
      expected: {
        kind: 'start',
        threadId: 't1',
        agent: 'ops',
        input: [{ id: 'u2', role: 'user', content: 'deploy prod' }],
        trigger: 'submit-message',
      },
    },
    {
      name: 'several text parts are joined',
      body: body([
        {
          id: 'u1',
          role: 'user',
          parts: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
      ]),
      pending: null,
      expected: {
        kind: 'start',
        threadId: 't1',
        agent: 'ops',
        input: [{ id: 'u1', role: 'user', content: 'a\nb' }],
        trigger: 'submit-message',
      },
    },
    {
      name: 'an approval response becomes a resume decision',
      body: body([
        user('deploy prod'),
        assistant([
          { type: 'step-start' },
          deployPart('approval-responded', { approval: { id: 'call_1', approved: true } }),
        ]),
      ]),
      pending: approvalPending,
      expected: {
        kind: 'decide',
        threadId: 't1',
        runId: 'r1',
        messageId: 'a1',
        decisions: [{ decisionId: approvalId, toolCallId: 'call_1', action: 'resume' }],
      },
    },
    {
      name: 'a denial becomes a cancel decision carrying the reason',
      body: body([
        user('deploy prod'),
        assistant([
          deployPart('approval-responded', {
            approval: { id: 'call_1', approved: false, reason: 'not today' },
          }),
        ]),
      ]),
      pending: approvalPending,
      expected: {
        kind: 'decide',
        threadId: 't1',
        runId: 'r1',
        messageId: 'a1',
        decisions: [
          {
            decisionId: approvalId,
            toolCallId: 'call_1',
            action: 'cancel',
            payload: { reason: 'not today' },
          },
        ],
      },
    },
    {
      name: 'a client tool output becomes a resume decision whose payload is the output',
      body: body([
        user('ask me'),
        assistant([askPart('output-available', { output: { answer: 'yes' } })]),
      ]),
      pending: clientPending,
      expected: {
        kind: 'decide',
        threadId: 't1',
        runId: 'r1',
        messageId: 'a1',
        decisions: [
          {
            decisionId: clientId,
            toolCallId: 'call_q',
            action: 'resume',
            payload: { answer: 'yes' },
          },
        ],
      },
    },
    {
      name: 'a client tool error becomes a cancel decision',
      body: body([
        user('ask me'),
        assistant([askPart('output-error', { errorText: 'no camera' })]),
      ]),
      pending: clientPending,
      expected: {
        kind: 'decide',
        threadId: 't1',
        runId: 'r1',
        messageId: 'a1',
        decisions: [
          {
            decisionId: clientId,
            toolCallId: 'call_q',
            action: 'cancel',
            payload: { error: 'no camera' },
          },
        ],
      },
    },
    {
      name: 'answered parts of calls that no longer wait are ignored',
      body: body([
        user('ask me'),
        assistant([
          {
            type: 'tool-search',
            toolCallId: 'call_old',
            state: 'output-available',
            input: {},
            output: 1,
          },
          askPart('output-available', { output: { answer: 'no' } }),
        ]),
      ]),
      pending: clientPending,
      expected: {
        kind: 'decide',
        threadId: 't1',
        runId: 'r1',
        messageId: 'a1',
        decisions: [
          {
            decisionId: clientId,
            toolCallId: 'call_q',
            action: 'resume',
            payload: { answer: 'no' },
          },
        ],
      },
    },
  ])('$name', ({ body: b, pending, expected }) => {
    expect(requestToCommands(b, pending)).toEqual(expected);
  });

  it('uses the default agent when the body names none', () => {
    const { agent: _agent, ...rest } = body([user('hi')]);
    expect(requestToCommands(rest, null, { defaultAgent: 'helper' })).toMatchObject({
      kind: 'start',
      agent: 'helper',
    });
  });

  it.each([
    { name: 'not an object', body: 'hi', pending: null, message: /invalid chat request/ },
    { name: 'no messages', body: body([]), pending: null, message: /messages must hold/ },
    {
      name: 'a thread id Baton cannot use',
      body: { ...body([user('x')]), id: 'a b' },
      pending: null,
      message: /id: may only contain/,
    },
    {
      name: 'an unknown trigger',
      body: body([user('x')], { trigger: 'resume-stream' }),
      pending: null,
      message: /trigger/,
    },
    {
      name: 'no agent',
      body: body([user('x')], { agent: undefined }),
      pending: null,
      message: /add `agent`/,
    },
    {
      name: 'an empty user message',
      body: body([user('  ')]),
      pending: null,
      message: /has no text/,
    },
    {
      name: 'a file part',
      body: body([
        { id: 'u', role: 'user', parts: [{ type: 'file', url: 'x', mediaType: 'image/png' }] },
      ]),
      pending: null,
      message: /file part/,
    },
    {
      name: 'an assistant message with no run waiting',
      body: body([
        user('x'),
        assistant([
          deployPart('approval-responded', { approval: { id: 'call_1', approved: true } }),
        ]),
      ]),
      pending: null,
      message: /no run is waiting/,
    },
    {
      name: 'an assistant message that answers nothing',
      body: body([
        user('x'),
        assistant([deployPart('approval-requested', { approval: { id: 'call_1' } })]),
      ]),
      pending: approvalPending,
      message: /answers none of the pending tool calls \(call_1\)/,
    },
    {
      name: 'a system message last',
      body: body([{ id: 's', role: 'system', parts: [{ type: 'text', text: 'x' }] }]),
      pending: null,
      message: /system message/,
    },
    {
      name: 'an approval response without approved',
      body: body([
        user('x'),
        assistant([deployPart('approval-responded', { approval: { id: 'call_1' } })]),
      ]),
      pending: approvalPending,
      message: /no approval.approved/,
    },
  ])('rejects $name with bad_request', ({ body: b, pending, message }) => {
    let error: unknown;
    try {
      requestToCommands(b, pending);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BatonError);
    expect((error as BatonError).code).toBe('bad_request');
    expect((error as BatonError).message).toMatch(message);
  });
});

import { describe, expect, it } from 'vitest';
import { SseParser, type SseMessage } from '@baton/testing/sse-client';
import { eventFrame, formatComment, formatFrame } from './sse.ts';

describe('SSE serializer', () => {
  it('writes id, event and data lines ended by a blank line', () => {
    expect(formatFrame({ id: 3, event: 'run.status', data: '{"a":1}' })).toBe(
      'id: 3\nevent: run.status\ndata: {"a":1}\n\n',
    );
    expect(formatComment('ping')).toBe(': ping\n\n');
  });

  it('splits multi-line data into several data lines and refuses line breaks in id/event', () => {
    expect(formatFrame({ data: 'a\nb\r\nc' })).toBe('data: a\ndata: b\ndata: c\n\n');
    expect(() => formatFrame({ event: 'a\nb', data: '' })).toThrow(/line breaks/);
    expect(() => formatFrame({ id: '1\r', data: '' })).toThrow(/line breaks/);
  });

  it('an event frame is the frame of its seq, type and JSON, whatever the event holds', () => {
    const events: { seq: number; type: string; [k: string]: unknown }[] = [
      { seq: 1, type: 'run.created', text: 'multi\nline\r\nand\rcr' },
      { seq: 22, type: 'text.delta', text: 'é ✓ "quoted" \u2028 \ud800' },
    ];
    for (const e of events)
      expect(eventFrame(e)).toBe(
        formatFrame({ id: e.seq, event: e.type, data: JSON.stringify(e) }),
      );
    expect(() => eventFrame({ seq: 3, type: 'a\nb' })).toThrow(/line breaks/);
  });

  it('round-trips through an EventSource-conformant parser, in arbitrary chunks', () => {
    const events = [
      { seq: 1, type: 'run.created', text: 'multi\nline' },
      { seq: 2, type: 'text.delta', text: 'é ✓ "quoted"' },
    ];
    const wire =
      formatComment('hello') +
      events.map(eventFrame).join('') +
      formatComment('ping') +
      formatFrame({ data: 'x\ny' });
    for (const size of [1, 3, 7, wire.length]) {
      const parser = new SseParser();
      const got: SseMessage[] = [];
      for (let i = 0; i < wire.length; i += size) got.push(...parser.push(wire.slice(i, i + size)));
      expect(
        got
          .slice(0, 2)
          .map((m): unknown[] => [m.type, m.lastEventId, JSON.parse(m.data) as unknown]),
      ).toEqual(events.map((e) => [e.type, String(e.seq), e]));
      expect(got[2]).toEqual({ type: 'message', data: 'x\ny', lastEventId: '2' });
      expect(parser.comments).toBe(2);
    }
  });

  it('parser follows EventSource rules: CR/CRLF line ends, no leading-space strip beyond one, empty data not dispatched', () => {
    const parser = new SseParser();
    const got = parser.push('event: a\r\ndata:  two spaces\r\rid: 7\nevent: ignored\n\ndata\n\n');
    expect(got).toEqual([
      { type: 'a', data: ' two spaces', lastEventId: '' },
      { type: 'message', data: '', lastEventId: '7' },
    ]);
  });
});

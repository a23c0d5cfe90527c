import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger, toPino, type BatonLogger } from './logger.ts';

interface Line {
  readonly method: string;
  readonly fields: unknown;
  readonly message?: string;
}

/** A logger that is not pino: it has only the methods BatonLogger names. */
function recorder(lines: Line[]): BatonLogger {
  const at =
    (method: string) =>
    (first: object | string, message?: string): void => {
      lines.push(
        typeof first === 'string'
          ? { method, fields: {}, message: first }
          : { method, fields: first, ...(message === undefined ? {} : { message }) },
      );
    };
  const logger: BatonLogger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => logger,
  };
  return logger;
}

describe('toPino', () => {
  it('hands a pino logger back as it is', () => {
    const logger = createLogger('test', 'info', { write: () => undefined });
    expect(toPino(logger)).toBe(logger);
    const plain = pino({ level: 'silent' });
    expect(toPino(plain)).toBe(plain);
  });

  it('writes every level to the matching method of a structural logger, with child bindings and redaction', () => {
    const lines: Line[] = [];
    const log = toPino(recorder(lines)).child({ runId: 'r1' });
    log.debug('starting');
    log.info({ step: 2 }, 'stepped');
    log.warn({ apiKey: 'sk-secret' }, 'careful');
    log.error({ err: new Error('boom') }, 'failed');
    log.fatal('gone');
    expect(lines.map((l) => [l.method, l.message])).toEqual([
      ['debug', 'starting'],
      ['info', 'stepped'],
      ['warn', 'careful'],
      ['error', 'failed'],
      ['error', 'gone'],
    ]);
    expect(lines[1]?.fields).toEqual({ runId: 'r1', step: 2 });
    expect(lines[2]?.fields).toEqual({ runId: 'r1', apiKey: '[redacted]' });
    expect(lines[3]?.fields).toMatchObject({ err: { type: 'Error', message: 'boom' } });
  });

  it('logs fields without a message as fields alone', () => {
    const lines: Line[] = [];
    toPino(recorder(lines)).info({ n: 1 });
    expect(lines).toEqual([{ method: 'info', fields: { n: 1 } }]);
  });
});

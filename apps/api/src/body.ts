import { BatonError } from '@baton/core';
import { MAX_JSON_DEPTH, jsonDepth } from '@baton/protocol';
import express, { type RequestHandler } from 'express';

/**
 * The JSON body parser of every route: size limit, strict (objects and arrays only), and a
 * nesting limit checked on the raw bytes before JSON.parse, so no recursive walk (schema check,
 * hashing, the engine) ever sees a body nested thousands deep.
 */
export function jsonBody(limitBytes: number, maxDepth = MAX_JSON_DEPTH): RequestHandler {
  return express.json({
    limit: limitBytes,
    strict: true,
    verify: (_req, _res, buf) => {
      const depth = jsonDepth(buf, maxDepth);
      if (depth > maxDepth)
        throw new BatonError(
          'payload_too_large',
          `request body nests arrays/objects more than ${maxDepth} levels deep; flatten it`,
          { maxDepth },
        );
    },
  });
}

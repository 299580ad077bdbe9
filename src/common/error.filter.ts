import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { pgCode, RETRYABLE } from '../database/transaction.js';
import { isDatabaseUnavailable } from '../database/unavailable.js';
import { ClimateError, errorBody, type ErrorBody } from './errors.js';

const HTTP_NAMES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  412: 'PreconditionFailed',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
};

function httpMessage(error: HttpException): string {
  const response = error.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : error.message;
}

/** Maps every error to Blazar's body; 4xx logged at warn, 5xx at error with the stack. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(error: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const body = this.toBody(error);
    if (body.error_code >= 500) {
      this.logger.error(error instanceof Error ? error : String(error));
    } else {
      this.logger.warn({ msg: body.error_message, status: body.error_code, name: body.error_type });
    }
    if (res.headersSent) return;
    // Outages pass: a client (or a load balancer) waits a moment instead of hammering.
    if (body.error_code === 503 && !res.hasHeader('Retry-After')) res.setHeader('Retry-After', '5');
    res.status(body.error_code).json(body);
  }

  private toBody(error: unknown): ErrorBody {
    if (error instanceof ClimateError) {
      return errorBody(error.status, error.message, error.errorName);
    }
    if (error instanceof HttpException) {
      const status = error.getStatus();
      if (status < 500) {
        const name = HTTP_NAMES[status] ?? 'HttpError';
        return errorBody(status, httpMessage(error), name);
      }
    }
    if (isDatabaseUnavailable(error)) {
      return errorBody(
        503,
        'The database cannot be reached; try again shortly',
        'ServiceUnavailable',
      );
    }
    if (RETRYABLE.has(pgCode(error) ?? '')) {
      return errorBody(
        409,
        'A concurrent request changed the same resources; try again',
        'ConcurrentUpdate',
      );
    }
    if (isBodyParserError(error)) {
      return errorBody(400, 'Malformed JSON body', 'BadRequest');
    }
    return errorBody(500, 'Internal Server Error', 'INTERNAL_SERVER_ERROR');
  }
}

function isBodyParserError(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { type?: string }).type === 'entity.parse.failed'
  );
}

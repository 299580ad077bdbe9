import {
  ArgumentsHost,
  Catch,
  Controller,
  ExceptionFilter,
  Get,
  Header,
  Inject,
  Res,
  ServiceUnavailableException,
  UseFilters,
} from '@nestjs/common';
import {
  ApiOkResponse,
  ApiOperation,
  ApiSecurity,
  ApiServiceUnavailableResponse,
} from '@nestjs/swagger';
import { HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { Response } from 'express';
import { Public } from '../common/auth/auth.guard.js';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { HealthResponse } from './health.response.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { MetricsService } from './metrics.service.js';
import { ReadinessChecks } from './readiness.service.js';

/** A failed check answers 503 with terminus' own body, not the API's error body. */
@Catch(ServiceUnavailableException)
class HealthCheckFailed implements ExceptionFilter {
  catch(error: ServiceUnavailableException, host: ArgumentsHost): void {
    host.switchToHttp().getResponse<Response>().status(503).json(error.getResponse());
  }
}

/**
 * What operators and Kubernetes watch: liveness, readiness and Prometheus metrics, on the
 * API port (roles api and all) and on METRICS_PORT (manager; all when it is set). The
 * probes are public (a kubelet has no token; they say up or down, and which dependency is
 * down). /metrics on the API port is decided by climate:metrics:get (admin by default; a
 * POLICY_FILE `"@"` lets a scraper in without a token); METRICS_PORT asks for nothing.
 */
@Controller()
@UseFilters(HealthCheckFailed)
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    private readonly checks: ReadinessChecks,
    private readonly metrics: MetricsService,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** Alive and serving. Nothing outside the process: a database outage is for /readyz. */
  @Get('healthz')
  @Public()
  @ApiSecurity({})
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Liveness: the process serves (a database outage is not its concern)' })
  @ApiOkResponse({ type: HealthResponse, description: 'Alive' })
  @ApiErrors()
  liveness() {
    return this.health.check([
      () => this.indicator.check('process').up({ role: this.config.role }),
    ]);
  }

  /** Can do its work now: the database, the OpenStack services in use, the manager. */
  @Get('readyz')
  @Public()
  @ApiSecurity({})
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Readiness: the database, Keystone, Nova and Placement in use, and the manager',
  })
  @ApiOkResponse({ type: HealthResponse, description: 'Every check passed' })
  @ApiServiceUnavailableResponse({ type: HealthResponse, description: 'A check failed' })
  @ApiErrors()
  readiness() {
    return this.health.check(this.checks.indicators());
  }

  @Get('metrics')
  @Authorize('climate:metrics:get', { tokenless: true })
  @ApiOperation({
    summary: "Prometheus metrics, in Prometheus' text format",
    description:
      'On the API port: climate:metrics:get decides (admin by default); with a rule that ' +
      'passes for anyone (`"@"` in POLICY_FILE) no token is asked. On METRICS_PORT: open.',
  })
  @ApiOkResponse({
    description: 'The metrics',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  @ApiErrors()
  async scrape(@Res({ passthrough: true }) res: Response): Promise<string> {
    const body = await this.metrics.scrape();
    res.setHeader('Content-Type', this.metrics.contentType);
    return body;
  }
}

import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Put,
  Query,
} from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
} from '@nestjs/swagger';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { toBoolean } from './host-fields.js';
import { AllocationsService } from '../pools/allocations.service.js';
import {
  AllocationBody,
  AllocationListBody,
  AllocationsQuery,
} from '../pools/dto/allocation.dto.js';
import {
  AvailabilityBody,
  AvailabilityQuery,
  CapacityBody,
  CapacityQuery,
  HostRequirementsQuery,
} from '../pools/dto/capacity.dto.js';
import { PoolMoveRequest } from '../pools/dto/pool.dto.js';
import { HostPowerBody, HostPowerRequest } from './dto/host-power.dto.js';
import { HostCreateRequest, HostUpdateRequest } from './dto/host.request.js';
import { HostBody, HostListBody } from './dto/host.response.js';
import {
  HostPropertiesQuery,
  HostPropertyBody,
  HostPropertyListBody,
  HostPropertyUpdateRequest,
} from './dto/host-property.dto.js';
import { flag, HostPropertiesService } from './host-properties.service.js';
import { HostPowerPort } from './host-power.js';
import { HostsService } from './hosts.service.js';

type Params = Record<string, string>;

/**
 * /v1/os-hosts, every route: hosts, their properties, allocations, pools and power marks.
 * Admin only, as in Blazar (capacity and availability: project readers too).
 */
@Controller('v1/os-hosts')
export class HostsController {
  constructor(
    private readonly hosts: HostsService,
    private readonly properties: HostPropertiesService,
    private readonly allocations: AllocationsService,
    private readonly power: HostPowerPort,
  ) {}

  @Get()
  @Authorize('blazar:oshosts:get')
  @ApiOperation({ summary: 'List the hosts (those a requirement matches, when given one)' })
  @ApiQuery({ type: HostRequirementsQuery })
  @ApiOkResponse({ type: HostListBody, description: 'The hosts' })
  @ApiErrors(400, 401, 403, 503)
  async list(@Query() query: Params) {
    const matching = await this.allocations.matchingHostIds(query);
    const hosts = await this.hosts.list();
    return { hosts: matching === null ? hosts : hosts.filter((h) => matching.has(h.id)) };
  }

  @Post()
  @HttpCode(201)
  @Authorize('blazar:oshosts:post')
  @ApiOperation({ summary: 'Register a host; it joins the freepool' })
  @ApiBody({ type: HostCreateRequest })
  @ApiCreatedResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(400, 401, 403, 409, 503)
  async create(@Body() body: HostCreateRequest) {
    return { host: await this.hosts.create(body) };
  }

  @Get('properties')
  @Authorize('blazar:oshosts:get_resource_properties')
  @ApiOperation({ summary: 'List the extra-capability names hosts have' })
  @ApiQuery({ type: HostPropertiesQuery })
  @ApiOkResponse({ type: HostPropertyListBody, description: 'The names' })
  @ApiErrors(401, 403, 503)
  async listProperties(@Query() query: Params) {
    return { resource_properties: await this.properties.list(flag(query.detail), flag(query.all)) };
  }

  @Patch('properties/:name')
  @Authorize('blazar:oshosts:update_resource_properties')
  @ApiOperation({ summary: 'Make an extra-capability name private or public' })
  @ApiBody({ type: HostPropertyUpdateRequest })
  @ApiOkResponse({ type: HostPropertyBody, description: 'The property' })
  @ApiErrors(400, 401, 403, 404, 503)
  async updateProperty(@Param('name') name: string, @Body() body: HostPropertyUpdateRequest) {
    const isPrivate = toBoolean('private', body.private);
    return { resource_property: await this.properties.setPrivate(name, isPrivate) };
  }

  @Get('allocations')
  @Authorize('blazar:oshosts:get_allocations', { inHandler: true })
  @ApiOperation({ summary: 'List every host with the reservations on it' })
  @ApiQuery({ type: AllocationsQuery })
  @ApiOkResponse({ type: AllocationListBody, description: 'The allocations' })
  @ApiErrors(400, 401, 403, 503)
  async listAllocations(@Caller() caller: Identity, @Query() query: Params) {
    return { allocations: await this.allocations.listFor(caller, query) };
  }

  @Get('capacity')
  @Authorize('climate:capacity:get')
  @ApiOperation({ summary: 'Plan: matching hosts, reserved and free, step by step' })
  @ApiQuery({ type: CapacityQuery })
  @ApiOkResponse({ type: CapacityBody, description: 'The plan' })
  @ApiErrors(400, 401, 403, 503)
  async capacity(@Query() query: Params) {
    return this.allocations.capacity(query);
  }

  @Get('availability')
  @Authorize('climate:availability:get')
  @ApiOperation({ summary: 'The earliest windows with enough free matching hosts' })
  @ApiQuery({ type: AvailabilityQuery })
  @ApiOkResponse({ type: AvailabilityBody, description: 'The windows, earliest first' })
  @ApiErrors(400, 401, 403, 503)
  async availability(@Query() query: Params) {
    return this.allocations.availability(query);
  }

  @Get(':id')
  @Authorize('blazar:oshosts:get')
  @ApiOperation({ summary: 'Show a host' })
  @ApiOkResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(401, 403, 404, 503)
  async get(@Param('id') id: string) {
    return { host: await this.hosts.get(id) };
  }

  @Put(':id')
  @Authorize('blazar:oshosts:put')
  @ApiOperation({ summary: 'Update a host: capabilities, inventory, reservable' })
  @ApiBody({ type: HostUpdateRequest })
  @ApiOkResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(400, 401, 403, 404, 409, 503)
  async update(@Param('id') id: string, @Body() body: HostUpdateRequest) {
    return { host: await this.hosts.update(id, body) };
  }

  @Delete(':id')
  @HttpCode(204)
  @Authorize('blazar:oshosts:delete')
  @ApiOperation({ summary: 'Remove a host nothing is reserved or running on' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiErrors(401, 403, 404, 409, 503)
  async remove(@Param('id') id: string): Promise<void> {
    await this.hosts.delete(id);
  }

  @Get(':id/allocation')
  @Authorize('blazar:oshosts:get_allocations', { inHandler: true })
  @ApiOperation({ summary: "Show a host's reservations" })
  @ApiQuery({ type: AllocationsQuery })
  @ApiOkResponse({ type: AllocationBody, description: 'The allocation' })
  @ApiErrors(400, 401, 403, 404, 503)
  async allocation(@Caller() caller: Identity, @Param('id') id: string, @Query() query: Params) {
    return { allocation: await this.allocations.forHostFor(caller, id, query) };
  }

  @Put(':id/pool')
  @Authorize('blazar:oshosts:put')
  @ApiOperation({ summary: 'Move a host to the shared pool or back to the freepool' })
  @ApiBody({ type: PoolMoveRequest })
  @ApiOkResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(400, 401, 403, 404, 409, 503)
  async move(@Param('id') id: string, @Body() body: PoolMoveRequest) {
    return { host: await this.hosts.moveToPool(id, body.pool) };
  }

  @Put(':id/power')
  @Authorize('climate:oshosts:power')
  @ApiOperation({ summary: 'Mark a host always on (never powered off by the plan), or not' })
  @ApiBody({ type: HostPowerRequest })
  @ApiOkResponse({ type: HostPowerBody, description: "The host's power" })
  @ApiErrors(400, 401, 403, 404, 503)
  async setPower(@Param('id') id: string, @Body() body: HostPowerRequest): Promise<HostPowerBody> {
    return { host: await this.power.setAlwaysOn(id, toBoolean('always_on', body.always_on)) };
  }
}

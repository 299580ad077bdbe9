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
import { requireAdmin } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { InvalidInput } from '../common/errors.js';
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
} from '../pools/dto/capacity.dto.js';
import { PoolMoveRequest } from '../pools/dto/pool.dto.js';
import { HostCreateRequest, HostUpdateRequest } from './dto/host.request.js';
import { HostBody, HostListBody } from './dto/host.response.js';
import {
  HostPropertiesQuery,
  HostPropertyBody,
  HostPropertyListBody,
  HostPropertyUpdateRequest,
} from './dto/host-property.dto.js';
import { flag, HostPropertiesService } from './host-properties.service.js';
import { HostsService } from './hosts.service.js';

type Body = Record<string, unknown>;
type Params = Record<string, string>;

function object(body: unknown): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidInput('The body must be a JSON object');
  }
  return body as Body;
}

/** /v1/os-hosts: hosts, their properties and allocations. Admin only, as in Blazar. */
@Controller('v1/os-hosts')
export class HostsController {
  constructor(
    private readonly hosts: HostsService,
    private readonly properties: HostPropertiesService,
    private readonly allocations: AllocationsService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List the hosts' })
  @ApiOkResponse({ type: HostListBody, description: 'The hosts' })
  @ApiErrors(401, 403, 503)
  async list(@Caller() caller: Identity) {
    requireAdmin(caller, 'blazar:oshosts:get');
    return { hosts: await this.hosts.list() };
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Register a host; it joins the freepool' })
  @ApiBody({ type: HostCreateRequest })
  @ApiCreatedResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(400, 401, 403, 409, 503)
  async create(@Caller() caller: Identity, @Body() body: unknown) {
    requireAdmin(caller, 'blazar:oshosts:post');
    return { host: await this.hosts.create(object(body)) };
  }

  @Get('properties')
  @ApiOperation({ summary: 'List the extra-capability names hosts have' })
  @ApiQuery({ type: HostPropertiesQuery })
  @ApiOkResponse({ type: HostPropertyListBody, description: 'The names' })
  @ApiErrors(401, 403, 503)
  async listProperties(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_resource_properties');
    return { resource_properties: await this.properties.list(flag(query.detail), flag(query.all)) };
  }

  @Patch('properties/:name')
  @ApiOperation({ summary: 'Make an extra-capability name private or public' })
  @ApiBody({ type: HostPropertyUpdateRequest })
  @ApiOkResponse({ type: HostPropertyBody, description: 'The property' })
  @ApiErrors(400, 401, 403, 404, 503)
  async updateProperty(
    @Caller() caller: Identity,
    @Param('name') name: string,
    @Body() body: unknown,
  ) {
    requireAdmin(caller, 'blazar:oshosts:update_resource_properties');
    const { private: isPrivate } = object(body);
    if (isPrivate === undefined)
      throw new InvalidInput('Missing parameter private', 'MissingParameter');
    return {
      resource_property: await this.properties.setPrivate(name, toBoolean('private', isPrivate)),
    };
  }

  @Get('allocations')
  @ApiOperation({ summary: 'List every host with the reservations on it' })
  @ApiQuery({ type: AllocationsQuery })
  @ApiOkResponse({ type: AllocationListBody, description: 'The allocations' })
  @ApiErrors(400, 401, 403, 503)
  async listAllocations(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return { allocations: await this.allocations.list(query) };
  }

  @Get('capacity')
  @ApiOperation({ summary: 'Plan: matching hosts, reserved and free, step by step' })
  @ApiQuery({ type: CapacityQuery })
  @ApiOkResponse({ type: CapacityBody, description: 'The plan' })
  @ApiErrors(400, 401, 403, 503)
  async capacity(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return this.allocations.capacity(query);
  }

  @Get('availability')
  @ApiOperation({ summary: 'The earliest windows with enough free matching hosts' })
  @ApiQuery({ type: AvailabilityQuery })
  @ApiOkResponse({ type: AvailabilityBody, description: 'The windows, earliest first' })
  @ApiErrors(400, 401, 403, 503)
  async availability(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return this.allocations.availability(query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Show a host' })
  @ApiOkResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(401, 403, 404, 503)
  async get(@Caller() caller: Identity, @Param('id') id: string) {
    requireAdmin(caller, 'blazar:oshosts:get');
    return { host: await this.hosts.get(id) };
  }

  @Put(':id')
  @ApiOperation({ summary: 'Update a host: capabilities, inventory, reservable' })
  @ApiBody({ type: HostUpdateRequest })
  @ApiOkResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(400, 401, 403, 404, 409, 503)
  async update(@Caller() caller: Identity, @Param('id') id: string, @Body() body: unknown) {
    requireAdmin(caller, 'blazar:oshosts:put');
    return { host: await this.hosts.update(id, object(body ?? {})) };
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a host nothing is reserved or running on' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiErrors(401, 403, 404, 409, 503)
  async remove(@Caller() caller: Identity, @Param('id') id: string): Promise<void> {
    requireAdmin(caller, 'blazar:oshosts:delete');
    await this.hosts.delete(id);
  }

  @Get(':id/allocation')
  @ApiOperation({ summary: "Show a host's reservations" })
  @ApiQuery({ type: AllocationsQuery })
  @ApiOkResponse({ type: AllocationBody, description: 'The allocation' })
  @ApiErrors(400, 401, 403, 404, 503)
  async allocation(@Caller() caller: Identity, @Param('id') id: string, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return { allocation: await this.allocations.forHost(id, query) };
  }

  @Put(':id/pool')
  @ApiOperation({ summary: 'Move a host to the shared pool or back to the freepool' })
  @ApiBody({ type: PoolMoveRequest })
  @ApiOkResponse({ type: HostBody, description: 'The host' })
  @ApiErrors(400, 401, 403, 404, 409, 503)
  async move(@Caller() caller: Identity, @Param('id') id: string, @Body() body: unknown) {
    requireAdmin(caller, 'blazar:oshosts:put');
    return { host: await this.hosts.moveToPool(id, object(body)) };
  }
}

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
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { requireAdmin } from '../common/auth/policy.js';
import { InvalidInput } from '../common/errors.js';
import { toBoolean } from './host-fields.js';
import { AllocationsService } from '../pools/allocations.service.js';
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
  async list(@Caller() caller: Identity) {
    requireAdmin(caller, 'blazar:oshosts:get');
    return { hosts: await this.hosts.list() };
  }

  @Post()
  @HttpCode(201)
  async create(@Caller() caller: Identity, @Body() body: unknown) {
    requireAdmin(caller, 'blazar:oshosts:post');
    return { host: await this.hosts.create(object(body)) };
  }

  @Get('properties')
  async listProperties(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_resource_properties');
    return { resource_properties: await this.properties.list(flag(query.detail), flag(query.all)) };
  }

  @Patch('properties/:name')
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
  async listAllocations(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return { allocations: await this.allocations.list(query) };
  }

  @Get('capacity')
  async capacity(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return this.allocations.capacity(query);
  }

  @Get('availability')
  async availability(@Caller() caller: Identity, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return this.allocations.availability(query);
  }

  @Get(':id')
  async get(@Caller() caller: Identity, @Param('id') id: string) {
    requireAdmin(caller, 'blazar:oshosts:get');
    return { host: await this.hosts.get(id) };
  }

  @Put(':id')
  async update(@Caller() caller: Identity, @Param('id') id: string, @Body() body: unknown) {
    requireAdmin(caller, 'blazar:oshosts:put');
    return { host: await this.hosts.update(id, object(body ?? {})) };
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Caller() caller: Identity, @Param('id') id: string): Promise<void> {
    requireAdmin(caller, 'blazar:oshosts:delete');
    await this.hosts.delete(id);
  }

  @Get(':id/allocation')
  async allocation(@Caller() caller: Identity, @Param('id') id: string, @Query() query: Params) {
    requireAdmin(caller, 'blazar:oshosts:get_allocations');
    return { allocation: await this.allocations.forHost(id, query) };
  }

  @Put(':id/pool')
  async move(@Caller() caller: Identity, @Param('id') id: string, @Body() body: unknown) {
    requireAdmin(caller, 'blazar:oshosts:put');
    return { host: await this.hosts.moveToPool(id, object(body)) };
  }
}

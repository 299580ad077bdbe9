import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
import { Authorize } from '../../common/auth/policy.js';
import { ApiErrors } from '../../common/dto/api-errors.decorator.js';
import { FloatingIpCreateRequest } from './dto/floatingip.request.js';
import { FloatingIpBody, FloatingIpListBody } from './dto/floatingip.response.js';
import { FloatingIpsService } from './floatingips.service.js';

/** /v1/floatingips: the addresses `virtual:floatingip` reserves, as in Blazar. */
@Controller('v1/floatingips')
export class FloatingIpsController {
  constructor(private readonly floatingips: FloatingIpsService) {}

  @Get()
  @Authorize('blazar:floatingips:get')
  @ApiOperation({ summary: 'List the registered floating IPs' })
  @ApiOkResponse({ type: FloatingIpListBody, description: 'The floating IPs' })
  @ApiErrors(401, 403, 404, 503)
  async list() {
    return { floatingips: await this.floatingips.list() };
  }

  @Post()
  @HttpCode(201)
  @Authorize('blazar:floatingips:post')
  @ApiOperation({ summary: 'Register an address of an external network for reservation' })
  @ApiBody({ type: FloatingIpCreateRequest })
  @ApiCreatedResponse({ type: FloatingIpBody, description: 'The floating IP' })
  @ApiErrors(400, 401, 403, 404, 409, 503)
  async create(@Body() body: FloatingIpCreateRequest) {
    return { floatingip: await this.floatingips.create({ ...body }) };
  }

  @Get(':id')
  @Authorize('blazar:floatingips:get')
  @ApiOperation({ summary: 'Show a floating IP' })
  @ApiOkResponse({ type: FloatingIpBody, description: 'The floating IP' })
  @ApiErrors(401, 403, 404, 503)
  async get(@Param('id') id: string) {
    return { floatingip: await this.floatingips.get(id) };
  }

  @Delete(':id')
  @HttpCode(204)
  @Authorize('blazar:floatingips:delete')
  @ApiOperation({ summary: 'Delete a floating IP no reservation holds' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors(401, 403, 404, 409, 503)
  async delete(@Param('id') id: string): Promise<void> {
    await this.floatingips.delete(id);
  }
}

import { UnsupportedResourceType } from '../common/errors.js';
import { callPlugin, PluginConfigurationError, PluginRegistry } from './plugin-registry.js';
import type { ResourcePlugin } from './resource-plugin.js';

const plugin = (resourceType: string) =>
  ({ resourceType, reserve: () => Promise.resolve() }) as unknown as ResourcePlugin;

describe('PluginRegistry', () => {
  it('should return the enabled plugin when its type is asked for', () => {
    const host = plugin('physical:host');
    const registry = new PluginRegistry([host, plugin('virtual:instance')], ['physical:host']);
    expect(registry.get('physical:host')).toBe(host);
    expect(registry.types()).toEqual(['physical:host']);
  });

  it('should answer 400 with Blazar text when the type is known but not enabled', () => {
    const registry = new PluginRegistry([plugin('physical:host')], []);
    expect(() => registry.get('physical:host')).toThrow(UnsupportedResourceType);
    expect(() => registry.get('foo:bar')).toThrow('The foo:bar resource type is not supported');
  });

  it.each([
    [[plugin('a:b'), plugin('a:b')], [], 'Two plugins claim the resource type a:b'],
    [[plugin('a:b')], ['c:d'], 'PLUGINS names c:d, which is not a known resource type'],
    [[plugin('a:b')], ['a:b', 'a:b'], 'PLUGINS names a:b twice'],
    [
      [{ resourceType: 'a:b' } as ResourcePlugin],
      [],
      'The a:b plugin has neither prepare nor reserve',
    ],
  ])(
    'should refuse to start when the configuration is wrong (%#)',
    (available, enabled, message) => {
      expect(() => new PluginRegistry(available, enabled)).toThrow(PluginConfigurationError);
      expect(() => new PluginRegistry(available, enabled)).toThrow(message);
    },
  );
});

describe('callPlugin', () => {
  const p = plugin('test:x');

  it('should return the result when the action finishes in time', async () => {
    await expect(callPlugin(p, 'on_start', async () => 7, 1000)).resolves.toBe(7);
  });

  it('should fail with the plugin name when the action takes too long', async () => {
    const never = () => new Promise<never>(() => undefined);
    await expect(callPlugin(p, 'on_start', never, 20)).rejects.toThrow(
      'test:x on_start timed out after 20 ms',
    );
  });

  it('should keep the cause when the action throws', async () => {
    const boom = new Error('nova said no');
    const failing = async () => {
      throw boom;
    };
    const error = await callPlugin(p, 'on_end', failing, 1000).catch((e: unknown) => e);
    expect((error as Error).message).toBe('test:x on_end failed: nova said no');
    expect((error as Error).cause).toBe(boom);
  });
});

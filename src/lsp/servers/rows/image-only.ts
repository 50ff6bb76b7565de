// The rows only the image installs (Java, Ruby: images/pins.env pins each
// release and sha256). They stay in the table on a host without them and report
// unavailable with the reason in /readyz.
import { readdir } from 'node:fs/promises';
import type { ServerAvailability } from '../../../health.js';
import { JAIL_HOME, JAIL_TMP } from '../../../jail/layout.js';
import { probeBinary, probeFiles } from '../server-env.js';
import type { ServerRow } from '../server-row.js';

/** Debian's JDK 17 (IMAGE_DEB_OPENJDK_17_JDK_HEADLESS), by its real path. */
export const JAVA = '/usr/lib/jvm/java-17-openjdk-amd64/bin/java';
/** Where the Dockerfile unpacks jdtls and installs ruby-lsp's gems (under /usr: the jail binds it). */
export const JDTLS_HOME = '/usr/local/share/jdtls';
export const RUBY_LSP_HOME = '/usr/local/lib/ruby-lsp';
/** Why the image-only rows are absent on a host: said by /readyz. */
const IMAGE_ONLY = 'is installed by the image only: images/pins.env pins its release and sha256, and this host cannot download it';

/** Nothing of the tree runs: no build tool import, no autobuild (annotation processors). */
const JDTLS_SETTINGS = {
  java: {
    import: { gradle: { enabled: false, wrapper: { enabled: false } }, maven: { enabled: false }, generatesMetadataFilesAtProjectRoot: false },
    autobuild: { enabled: false },
    configuration: { updateBuildConfiguration: 'disabled' },
    maven: { downloadSources: false },
    telemetry: { enabled: false },
  },
};

/** jdtls: the JDK and the unpacked release; its version from the core plugin's file name. */
async function probeJdtls(): Promise<ServerAvailability> {
  const absent = { available: false, reason: `not installed (jdtls ${IMAGE_ONLY})` };
  const jdk = await probeBinary({ path: JAVA, debianPackage: 'openjdk-17-jdk-headless', absent: '' });
  if (!jdk.available || !(await probeFiles([`${JDTLS_HOME}/launcher.jar`, `${JDTLS_HOME}/config_linux/config.ini`])).available) return absent;
  const core = (await readdir(`${JDTLS_HOME}/plugins`).catch(() => [] as string[]))
    .map((f) => /^org\.eclipse\.jdt\.ls\.core_(\d+\.\d+\.\d+)/.exec(f)?.[1])
    .find(Boolean);
  return { available: true, ...(core ? { version: `${core} (JDK ${jdk.version ?? '17'})` } : {}) };
}

/** ruby-lsp: Ruby and the installed gems; its version from the gem's specification file. */
async function probeRubyLsp(): Promise<ServerAvailability> {
  const absent = { available: false, reason: `not installed (ruby-lsp ${IMAGE_ONLY})` };
  if (!(await probeBinary({ path: `${RUBY_LSP_HOME}/bin/ruby-lsp`, absent: '' })).available) return absent;
  if (!(await probeBinary({ path: '/usr/bin/ruby', absent: '' })).available) return absent;
  const spec = (await readdir(`${RUBY_LSP_HOME}/specifications`).catch(() => [] as string[]))
    .map((f) => /^ruby-lsp-(\d[\w.]*)\.gemspec$/.exec(f)?.[1])
    .find(Boolean);
  return { available: true, ...(spec ? { version: spec } : {}) };
}

export function imageOnlyRows(): ServerRow[] {
  return [
    {
      // Eclipse JDT LS 1.39.0 on Debian's JDK 17, installed by the image only
      // (images/pins.env: the dated milestone tarball, checked against its sha256,
      // under /usr/local/share/jdtls). Run by java directly, not its python wrapper.
      // Quirks:
      // - configuration area: the shipped config_linux is read-only in the jail, so it
      //   is the shared (cascaded, read-only) area and the writable one is in the
      //   jail's tmp (-configuration); the workspace data dir (-data) is in the
      //   private HOME. Both go with the session.
      // - code from the tree: importing a Gradle project runs its build scripts (and
      //   a wrapper the tree ships, which downloads), a Maven one its plugins: both
      //   imports are off, and so is the autobuild, which would run annotation
      //   processors a tree's .factorypath names. It reads sources as an unmanaged folder.
      // - java is named by its real path: /usr/bin/java is a link through
      //   /etc/alternatives, which the jail does not bind.
      name: 'jdtls',
      languages: ['java'],
      argv: [
        JAVA,
        '-Declipse.application=org.eclipse.jdt.ls.core.id1',
        '-Dosgi.bundles.defaultStartLevel=4',
        '-Declipse.product=org.eclipse.jdt.ls.core.product',
        '-Dosgi.checkConfiguration=true',
        `-Dosgi.sharedConfiguration.area=${JDTLS_HOME}/config_linux`,
        '-Dosgi.sharedConfiguration.area.readOnly=true',
        '-Dosgi.configuration.cascaded=true',
        '-Dlog.level=ERROR',
        '-Xmx1G',
        '--add-modules=ALL-SYSTEM',
        '--add-opens',
        'java.base/java.util=ALL-UNNAMED',
        '--add-opens',
        'java.base/java.lang=ALL-UNNAMED',
        '-jar',
        `${JDTLS_HOME}/launcher.jar`,
        '-configuration',
        `${JAIL_TMP}/jdtls-config`,
        '-data',
        `${JAIL_HOME}/jdtls-data`,
      ],
      env: {},
      rootMarkers: ['pom.xml', 'build.gradle', 'build.gradle.kts', '.project'],
      initializationOptions: { settings: JDTLS_SETTINGS },
      settings: JDTLS_SETTINGS,
      readiness: { kind: 'progress' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeJdtls(),
    },
    {
      // ruby-lsp 0.23.11 and its gems on Debian's Ruby 3.1, installed by the image only
      // (images/pins.env: each .gem checked against its sha256, installed with no
      // resolution under /usr/local/lib/ruby-lsp). Quirks:
      // - BUNDLE_GEMFILE names the image's empty Gemfile: unset, ruby-lsp composes a
      //   bundle from the tree's Gemfile in <tree>/.ruby-lsp and runs `bundle install`
      //   (the tree's gems' code, the network). So there is no bundle install, and
      //   the tree's own gems do not resolve.
      // - GEM_PATH is the image's gems, read-only; GEM_HOME the private HOME.
      // - code from the tree: RuboCop would `require` what a tree's .rubocop.yml
      //   names, so the formatter and linters are off; RUBYOPT/RUBYLIB are empty so
      //   no -r reaches the interpreter.
      name: 'ruby-lsp',
      languages: ['ruby'],
      argv: [`${RUBY_LSP_HOME}/bin/ruby-lsp`],
      env: { GEM_PATH: RUBY_LSP_HOME, GEM_HOME: `${JAIL_HOME}/gems`, BUNDLE_GEMFILE: `${RUBY_LSP_HOME}/Gemfile`, RUBYOPT: '', RUBYLIB: '' },
      initializationOptions: { formatter: 'none', linters: [] },
      rootMarkers: ['Gemfile', '.ruby-version'],
      readiness: { kind: 'progress' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeRubyLsp(),
    },
  ];
}

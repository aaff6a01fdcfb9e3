/**
 * Runs the example Operator controller against a kubeconfig: `npx tsx examples/operator/main.ts
 * [--kubeconfig FILE] [--install-crd]`. Hoist itself (`hoist run`) must run too: this controller
 * only creates, pauses and deletes BundleDeployments and reads their status.
 */
import { parseArgs } from 'node:util';
import { createKubeClient, loadKubeConfig } from '../../src/kube/client.ts';
import { handleShutdown } from '../../src/kube/shutdown.ts';
import { createLogger } from '../../src/util/log.ts';
import { operatorCRD } from './crd.ts';
import { OperatorController } from './operator-controller.ts';

const { values } = parseArgs({ options: { kubeconfig: { type: 'string' }, 'install-crd': { type: 'boolean', default: false } } });
const log = createLogger();
const client = createKubeClient(loadKubeConfig(values.kubeconfig));
if (values['install-crd']) await client.apply(operatorCRD(), { fieldManager: 'hoist-operator-example', force: true });
const ctl = new OperatorController({ client, log });
await ctl.start();
log.info('operator controller started');
handleShutdown({ controllers: [{ stop: () => ctl.stop() }], logger: log, onDone: (clean) => void client.close().then(() => process.exit(clean ? 0 : 1)) });

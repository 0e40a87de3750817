import { BASH_ERROR, codedError } from '@deepseek-ai/dsh-bash'

/**
 * Every error the Kubernetes executor raises on purpose: a stable `code` (the seam's BASH_ERROR
 * where one fits, else `DSH_KUBERNETES_…`) and the message, which stays byte for byte as the README
 * gives it. Nothing classifies these errors by their text.
 */
export const KUBERNETES_ERROR = {
  /** The config, the pod template or the image setting failed validation (at load). */
  invalidConfig: BASH_ERROR.invalidConfig,
  /** The kubeconfig cannot be loaded or names no cluster. */
  kubeconfig: 'DSH_KUBERNETES_KUBECONFIG',
  /** The API refused to create the session pod (or the NetworkPolicy). */
  createFailed: 'DSH_KUBERNETES_CREATE_FAILED',
  /** The session pod did not reach a running container in time, or failed on the way. */
  notReady: 'DSH_KUBERNETES_NOT_READY',
  /** An exec into the session pod could not be opened. */
  execFailed: 'DSH_KUBERNETES_EXEC_FAILED',
  /** Copying the workspace into the session pod failed (`workspaceMode: "copy"`). */
  workspaceCopy: 'DSH_KUBERNETES_WORKSPACE_COPY',
} as const

/** The stable errors of this package, in one place (factories; match on `code`, never on the text). */
export const kubernetesErrors = {
  invalidConfig: (detail: string) => codedError(KUBERNETES_ERROR.invalidConfig, `invalid kubernetes executor config: ${detail}`),
  noImage: () => codedError(KUBERNETES_ERROR.invalidConfig, 'invalid kubernetes executor config: image is required (neither the config nor the pod template names one)'),
  badTemplate: (why: string) => codedError(KUBERNETES_ERROR.invalidConfig, `invalid kubernetes executor config: pod template: ${why}`),
  noContainer: (name: string) => codedError(KUBERNETES_ERROR.invalidConfig, `invalid kubernetes executor config: the pod template has no container ${JSON.stringify(name)}`),
  kubeconfig: (why: string) => codedError(KUBERNETES_ERROR.kubeconfig, `cannot load the kubeconfig: ${why}`),
  createFailed: (why: string) => codedError(KUBERNETES_ERROR.createFailed, `cannot create the session pod: ${why}`),
  notReady: (pod: string, why: string) => codedError(KUBERNETES_ERROR.notReady, `the session pod ${pod} did not start: ${why}`),
  execFailed: (pod: string, why: string) => codedError(KUBERNETES_ERROR.execFailed, `cannot exec into the session pod ${pod}: ${why}`),
  workspaceCopy: (pod: string, why: string) => codedError(KUBERNETES_ERROR.workspaceCopy, `cannot copy the workspace into the session pod ${pod}: ${why}`),
}

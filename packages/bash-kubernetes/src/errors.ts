/** The stable messages of this package, in one place. */
export const kubernetesErrors = {
  noImage: () => 'invalid kubernetes executor config: image is required (neither the config nor the pod template names one)',
  badTemplate: (why: string) => `invalid kubernetes executor config: pod template: ${why}`,
  noContainer: (name: string) => `invalid kubernetes executor config: the pod template has no container ${JSON.stringify(name)}`,
  kubeconfig: (why: string) => `cannot load the kubeconfig: ${why}`,
  createFailed: (why: string) => `cannot create the session pod: ${why}`,
  notReady: (pod: string, why: string) => `the session pod ${pod} did not start: ${why}`,
  execFailed: (pod: string, why: string) => `cannot exec into the session pod ${pod}: ${why}`,
}

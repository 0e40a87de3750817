// The container suites' probe (engine answering, offline image built): the fake API server's pods are containers.
export { ENGINE_URL, TEST_IMAGE, containersWithLabel, createdAndDestroyed, processesWith, unavailableReason } from '../../bash-container/test/docker.js'

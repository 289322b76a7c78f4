package engines

// registry is every engine a plan may name, in the order their
// descriptors are read: discovery asks the engines' self-descriptions in
// this order, and the Prometheus probe prefers an earlier engine's
// spelling when a server serves two engines' names for one column.
var registry = []*Engine{&Custom, &Sim, &VLLM, &LlamaServer, &SGLang, &Ollama, &MAX, &TGI}

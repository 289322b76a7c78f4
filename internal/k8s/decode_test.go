package k8s

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// Scheme holds the kinds Render produces, for strict decoding: the tests
// decode every manifest Render writes as the API server would.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // registering the API's own types cannot fail
		}
	}
	return s
}

// DecodeStrict decodes one YAML document with the API machinery's own
// deserializer in strict mode: an unknown or duplicated field is an error,
// as it is to `kubectl apply --validate=strict`.
func DecodeStrict(doc []byte) (runtime.Object, error) {
	s := Scheme()
	ser := json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true, Strict: true})
	obj, _, err := ser.Decode(doc, nil, nil)
	return obj, err
}

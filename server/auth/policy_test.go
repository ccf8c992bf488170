package auth_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/auth"
)

// Every method of every parley.v1 service is in the policy table, and only
// SignUp, GetSignUpPolicy, Login and reading a shared conversation are
// public.
func TestPolicyCoversEveryProcedure(t *testing.T) {
	public := map[string]bool{"/parley.v1.AuthService/SignUp": true, "/parley.v1.AuthService/Login": true,
		"/parley.v1.AuthService/GetSignUpPolicy":               true,
		"/parley.v1.ConversationService/GetSharedConversation": true}
	n := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("parley.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				proc := "/" + string(svc.FullName()) + "/" + string(svc.Methods().Get(j).Name())
				n++
				access, ok := auth.Policy[proc]
				if !ok {
					t.Errorf("%s is not in auth.Policy", proc)
				}
				if (access == auth.AccessPublic) != public[proc] {
					t.Errorf("%s is %v", proc, access)
				}
				if svc.Name() == "AdminService" && access != auth.AccessAdmin {
					t.Errorf("%s is %v, want admin", proc, access)
				}
			}
		}
		return true
	})
	if n < 25 {
		t.Fatalf("found only %d procedures", n)
	}
}

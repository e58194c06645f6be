// maarequest reads an AzureGuest attest request body (what the agent POSTs to
// <maa>/attest/AzureGuest) on stdin, decodes it with Go's encoding/json into structs of the
// shape go-azguestattestation's maa package marshals (maa/gettoken.go: attestRequest,
// attestationInfo with its base64url MarshalJSON, proof as a base64 string of its JSON, the
// report as unpadded base64url, infoString as base64), marshals the values again and prints
// "OK <bytes>" when that is byte for byte the input; else the first difference, exit 1.
// Standard library only (GOPATH mode, offline).
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

type attestRequest struct {
	AttestationInfo attestationInfo
}

type attestationInfo struct {
	AttestationProtocolVersion string
	ClientPayload              clientPayload
	IsolationInfo              isolationInfo
	OSBuild                    infoString
	OSDistro                   infoString
	OSType                     infoString
	OSVersionMajor             int
	OSVersionMinor             int
	TcgLogs                    []byte
	TpmInfo                    tpmInfo
}

type clientPayload struct {
	Nonce []byte `json:"nonce"`
}

type isolationInfo struct {
	Evidence evidence
	Type     string
}

type evidence struct {
	Proof       proof
	RunTimeData []byte
}

type proof struct {
	SnpReport     reportBytes
	VcekCertChain []byte
}

type tpmInfo struct {
	AikCert                    []byte
	AikPub                     []byte
	EncKeyCertifyInfo          []byte
	EncKeyCertifyInfoSignature []byte
	EncKeyPub                  []byte
	PCRs                       []pcr
	PcrQuote                   []byte
	PcrSet                     []int
	PcrSignature               []byte
}

type pcr struct {
	Digest []byte
	Index  int
}

type infoString string
type reportBytes []byte

func rawURL(b []byte) []byte { return []byte("\"" + base64.RawURLEncoding.EncodeToString(b) + "\"") }

func unRawURL(b []byte) ([]byte, error) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil, fmt.Errorf("not a JSON string")
	}
	return base64.RawURLEncoding.DecodeString(string(b[1 : len(b)-1]))
}

func (a attestationInfo) MarshalJSON() ([]byte, error) {
	type plain attestationInfo
	m, err := json.Marshal(plain(a))
	if err != nil {
		return nil, err
	}
	return rawURL(m), nil
}

func (a *attestationInfo) UnmarshalJSON(data []byte) error {
	u, err := unRawURL(data)
	if err != nil {
		return err
	}
	type plain attestationInfo
	d := json.NewDecoder(bytes.NewReader(u))
	d.DisallowUnknownFields()
	return d.Decode((*plain)(a))
}

func (p proof) MarshalJSON() ([]byte, error) {
	type plain proof
	m, err := json.Marshal(plain(p))
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func (p *proof) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	type plain proof
	return json.Unmarshal(b, (*plain)(p))
}

func (s infoString) MarshalJSON() ([]byte, error) { return json.Marshal([]byte(s)) }

func (s *infoString) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	*s = infoString(b)
	return nil
}

func (r reportBytes) MarshalJSON() ([]byte, error) { return rawURL(r), nil }

func (r *reportBytes) UnmarshalJSON(data []byte) error {
	u, err := unRawURL(data)
	*r = u
	return err
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Println("read:", err)
		os.Exit(1)
	}
	var req attestRequest
	if err := json.Unmarshal(in, &req); err != nil {
		fmt.Println("unmarshal:", err)
		os.Exit(1)
	}
	out, err := json.Marshal(req)
	if err != nil {
		fmt.Println("marshal:", err)
		os.Exit(1)
	}
	if !bytes.Equal(in, out) {
		i := 0
		for i < len(in) && i < len(out) && in[i] == out[i] {
			i++
		}
		fmt.Printf("differs from Go's encoding at byte %d of %d (Go: %d bytes)\n", i, len(in), len(out))
		os.Exit(1)
	}
	// the inner JSON too, byte for byte (the outer comparison covers its base64url)
	if req.AttestationInfo.AttestationProtocolVersion != "2.0" || req.AttestationInfo.IsolationInfo.Type != "SevSnp" ||
		len(req.AttestationInfo.IsolationInfo.Evidence.Proof.SnpReport) != 1184 || len(req.AttestationInfo.TpmInfo.PCRs) != 8 {
		fmt.Println("decoded values are not an SNP AzureGuest request")
		os.Exit(1)
	}
	fmt.Printf("OK %d\n", len(in))
}
